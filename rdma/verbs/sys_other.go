//go:build !linux || !cgo

package verbs

import (
	"runtime"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
)

// Without cgo, or off Linux, there is no libibverbs to load: Open fails
// and says why, and nothing below it can be reached.

const haveVerbs = false

type cqSys struct{}

func unavailable() error {
	why := "built without cgo (CGO_ENABLED=0), so libibverbs cannot be loaded"
	if runtime.GOOS != "linux" {
		why = "libibverbs is Linux-only, and this is " + runtime.GOOS
	}
	return errkind.Of("rdma/verbs: RDMA verbs unavailable: "+why, ErrUnavailable, nil)
}

func sysLoad(string) error                                 { return unavailable() }
func sysDevices() ([]DeviceInfo, error)                    { return nil, unavailable() }
func sysOpenDevice(string) (unsafe.Pointer, error)         { return nil, unavailable() }
func sysCloseDevice(unsafe.Pointer) error                  { return unavailable() }
func sysQueryDevice(unsafe.Pointer) (DeviceAttr, error)    { return DeviceAttr{}, unavailable() }
func sysQueryPort(unsafe.Pointer, uint8) (PortAttr, error) { return PortAttr{}, unavailable() }
func sysQueryGID(unsafe.Pointer, uint8, int) (GID, error)  { return GID{}, unavailable() }
func sysAllocPD(unsafe.Pointer) (unsafe.Pointer, error)    { return nil, unavailable() }
func sysDeallocPD(unsafe.Pointer) error                    { return unavailable() }
func sysDeregMR(unsafe.Pointer) error                      { return unavailable() }
func sysCreateCQ(unsafe.Pointer, int) (unsafe.Pointer, int, error) {
	return nil, 0, unavailable()
}
func sysDestroyCQ(unsafe.Pointer) error             { return unavailable() }
func sysPoll(*CQ, []Completion) (int, error)        { return 0, unavailable() }
func sysDestroyQP(unsafe.Pointer) error             { return unavailable() }
func sysModifyRTR(unsafe.Pointer, rtr) error        { return unavailable() }
func sysPostRecv(unsafe.Pointer, uint64, SGE) error { return unavailable() }

func sysRegMR(unsafe.Pointer, []byte, Access) (unsafe.Pointer, uint32, uint32, error) {
	return nil, 0, 0, unavailable()
}

func sysCreateQP(unsafe.Pointer, unsafe.Pointer, unsafe.Pointer, QPCaps) (unsafe.Pointer, uint32, QPCaps, error) {
	return nil, 0, QPCaps{}, unavailable()
}

func sysModifyInit(unsafe.Pointer, uint8, Access) error { return unavailable() }

func sysModifyRTS(unsafe.Pointer, uint32, uint8, uint8, uint8, uint8) error {
	return unavailable()
}

func sysPostSend(unsafe.Pointer, uint64, wrOpcode, SendFlags, uint32, SGE, Remote, uint64, uint64) error {
	return unavailable()
}
