//go:build !linux || !cgo

package cuda

import (
	"runtime"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
)

// Without cgo, or off Linux, there is no libcuda to load: Open fails and
// says why, and nothing below it can be reached.

const haveDriver = false

func unavailable() error {
	why := "built without cgo (CGO_ENABLED=0), so libcuda cannot be loaded"
	if runtime.GOOS != "linux" {
		why = "this package loads the CUDA driver on Linux only, and this is " + runtime.GOOS
	}
	return errkind.Of("gpu/cuda: CUDA unavailable: "+why, ErrUnavailable, nil)
}

func sysLoad(string) error                                { return unavailable() }
func sysInit() error                                      { return unavailable() }
func sysDriverVersion() (int, error)                      { return 0, unavailable() }
func sysDeviceCount() (int, error)                        { return 0, unavailable() }
func sysDevice(int) (Device, error)                       { return Device{}, unavailable() }
func sysPrimaryCtxRetain(int32) (unsafe.Pointer, error)   { return nil, unavailable() }
func sysPrimaryCtxRelease(int32) error                    { return unavailable() }
func sysMemAlloc(unsafe.Pointer, int) (uint64, error)     { return 0, unavailable() }
func sysMemFree(unsafe.Pointer, uint64) error             { return unavailable() }
func sysMemFreeHost(unsafe.Pointer, unsafe.Pointer) error { return unavailable() }
func sysCopyHtoD(unsafe.Pointer, uint64, []byte) error    { return unavailable() }
func sysCopyDtoH(unsafe.Pointer, []byte, uint64) error    { return unavailable() }
func sysCopyDtoD(unsafe.Pointer, uint64, uint64, int) error {
	return unavailable()
}
func sysMemset(unsafe.Pointer, uint64, byte, int) error { return unavailable() }
func sysMemAllocHost(unsafe.Pointer, int) (unsafe.Pointer, error) {
	return nil, unavailable()
}

func sysCopyHtoDAsync(unsafe.Pointer, unsafe.Pointer, uint64, unsafe.Pointer, int) error {
	return unavailable()
}

func sysCopyDtoHAsync(unsafe.Pointer, unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return unavailable()
}

func sysCopyDtoDAsync(unsafe.Pointer, unsafe.Pointer, uint64, uint64, int) error {
	return unavailable()
}

func sysStreamCreate(unsafe.Pointer, bool) (unsafe.Pointer, error) { return nil, unavailable() }
func sysStreamDestroy(unsafe.Pointer, unsafe.Pointer) error        { return unavailable() }
func sysStreamSynchronize(unsafe.Pointer, unsafe.Pointer) error    { return unavailable() }
func sysStreamQuery(unsafe.Pointer, unsafe.Pointer) (bool, error)  { return false, unavailable() }
func sysStreamWaitEvent(unsafe.Pointer, unsafe.Pointer, unsafe.Pointer) error {
	return unavailable()
}
func sysEventCreate(unsafe.Pointer, bool) (unsafe.Pointer, error) { return nil, unavailable() }
func sysEventRecord(unsafe.Pointer, unsafe.Pointer, unsafe.Pointer) error {
	return unavailable()
}
func sysEventSynchronize(unsafe.Pointer, unsafe.Pointer) error   { return unavailable() }
func sysEventQuery(unsafe.Pointer, unsafe.Pointer) (bool, error) { return false, unavailable() }
func sysEventDestroy(unsafe.Pointer, unsafe.Pointer) error       { return unavailable() }
func sysEventElapsed(unsafe.Pointer, unsafe.Pointer, unsafe.Pointer) (float32, error) {
	return 0, unavailable()
}

func sysModuleLoad(unsafe.Pointer, []byte) (unsafe.Pointer, error) { return nil, unavailable() }
func sysModuleUnload(unsafe.Pointer, unsafe.Pointer) error         { return unavailable() }
func sysModuleFunction(unsafe.Pointer, unsafe.Pointer, string) (unsafe.Pointer, error) {
	return nil, unavailable()
}
func sysLaunch(unsafe.Pointer, unsafe.Pointer, uint32, uint32, unsafe.Pointer, []uint64) error {
	return unavailable()
}

func sysMemAddressRange(unsafe.Pointer, uint64) (uint64, int, error) { return 0, 0, unavailable() }
func sysIpcGetMemHandle(unsafe.Pointer, uint64, *[ipcHandleSize]byte) error {
	return unavailable()
}
func sysIpcOpenMemHandle(unsafe.Pointer, *[ipcHandleSize]byte) (uint64, error) {
	return 0, unavailable()
}
func sysIpcCloseMemHandle(unsafe.Pointer, uint64) error { return unavailable() }
func sysIpcGetEventHandle(unsafe.Pointer, unsafe.Pointer, *[ipcHandleSize]byte) error {
	return unavailable()
}
func sysIpcOpenEventHandle(unsafe.Pointer, *[ipcHandleSize]byte) (unsafe.Pointer, error) {
	return nil, unavailable()
}
func sysStreamWriteValue(unsafe.Pointer, unsafe.Pointer, uint64, uint64, int) error {
	return unavailable()
}
func sysStreamWaitValue(unsafe.Pointer, unsafe.Pointer, uint64, uint64, int, WaitCond) error {
	return unavailable()
}

func sysStreamMemOps(unsafe.Pointer, unsafe.Pointer, []uint64) error { return unavailable() }
