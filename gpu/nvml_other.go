//go:build !linux || !cgo

package gpu

import (
	"runtime"

	"github.com/gocomms/gocomms/internal/errkind"
)

// Devices reports why no GPU can be found in this build: NVML is reached
// through cgo, on Linux only.
func Devices() ([]Device, error) {
	why := "built without cgo (CGO_ENABLED=0), so NVML cannot be loaded"
	if runtime.GOOS != "linux" {
		why = "NVML is loaded on Linux only, and this is " + runtime.GOOS
	}
	return nil, errkind.Of("gpu: no NVIDIA GPU available: "+why, ErrUnavailable, nil)
}
