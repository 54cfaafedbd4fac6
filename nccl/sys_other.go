//go:build !linux || !cgo

package nccl

import (
	"runtime"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
)

// Without cgo, or off Linux, there is no libnccl to load: New fails and
// says why, and nothing below it can be reached.

const haveLoader = false

func unavailable() error {
	why := "built without cgo (CGO_ENABLED=0), so libnccl cannot be loaded"
	if runtime.GOOS != "linux" {
		why = "this package loads NCCL on Linux only, and this is " + runtime.GOOS
	}
	return errkind.Of("nccl: NCCL unavailable: "+why, ErrUnavailable, nil)
}

func sysLoad(string) error                                               { return unavailable() }
func sysBindCUDA() error                                                 { return unavailable() }
func sysVersion() int                                                    { return 0 }
func sysPath() string                                                    { return "" }
func sysUniqueID() ([idBytes]byte, error)                                { return [idBytes]byte{}, unavailable() }
func sysInit(uintptr, int, int, [idBytes]byte) (unsafe.Pointer, error)   { return nil, unavailable() }
func sysSplit(uintptr, unsafe.Pointer, int, int) (unsafe.Pointer, error) { return nil, unavailable() }
func sysAbort(uintptr, unsafe.Pointer) error                             { return unavailable() }
func sysClose(uintptr, unsafe.Pointer) error                             { return unavailable() }
func sysAsyncError(uintptr, unsafe.Pointer) error                        { return unavailable() }
func sysRun(uintptr, unsafe.Pointer, uintptr, []call, int, bool, [8]byte) error {
	return unavailable()
}
