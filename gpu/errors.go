package gpu

import (
	"errors"

	"github.com/gocomms/gocomms/internal/errkind"
)

var (
	// ErrUnavailable reports that no GPU can be used here: the binary was
	// built without cgo, the system is not Linux, NVML cannot be loaded
	// (ErrNoLibrary) or started, or it lists no device (ErrNoDevice).
	ErrUnavailable = errors.New("gpu: no NVIDIA GPU available")
	// ErrNoLibrary reports that libnvidia-ml.so.1 cannot be loaded. It
	// wraps ErrUnavailable.
	ErrNoLibrary = errkind.Sentinel("gpu: NVML not found (libnvidia-ml.so.1; the NVIDIA driver provides it)", ErrUnavailable)
	// ErrNoDevice reports that NVML started but lists no GPU. It wraps
	// ErrUnavailable.
	ErrNoDevice = errkind.Sentinel("gpu: NVML lists no GPU", ErrUnavailable)
)
