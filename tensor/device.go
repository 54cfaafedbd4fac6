package tensor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gocomms/gocomms/internal/names"
)

// DeviceType says which kind of memory a tensor lives in.
type DeviceType uint8

// The device types. The zero value is the CPU, so the zero Device is CPU.
const (
	DeviceCPU DeviceType = iota
	DeviceCUDA
	// DeviceMeta holds no memory at all, as PyTorch's meta device: a
	// tensor there has a dtype and a shape, and operations on it move
	// their sizes but no data (the simulator times collectives too large
	// to hold so).
	DeviceMeta
)

var deviceTypeNames = [...]string{DeviceCPU: "cpu", DeviceCUDA: "cuda", DeviceMeta: "meta"}

// String returns "cpu", "cuda", "meta" or "device_type(N)".
func (t DeviceType) String() string { return names.Of(t, "device_type", deviceTypeNames[:]) }

// Device names a memory location: a device type and, for accelerators, an
// index. The CPU has a single device; its Index is ignored.
type Device struct {
	Type  DeviceType
	Index int
}

// CPU is host memory.
var CPU = Device{Type: DeviceCPU}

// Meta is the device of tensors with no memory (DeviceMeta).
var Meta = Device{Type: DeviceMeta}

// CUDA returns the CUDA device with the given ordinal.
func CUDA(index int) Device { return Device{Type: DeviceCUDA, Index: index} }

// IsCPU reports whether d is host memory, the only place this package
// allocates today.
func (d Device) IsCPU() bool { return d.Type == DeviceCPU }

// String returns "cpu", "meta" or "<type>:<index>", e.g. "cuda:0".
func (d Device) String() string {
	if d.Type == DeviceCPU || d.Type == DeviceMeta {
		return d.Type.String()
	}
	return d.Type.String() + ":" + strconv.Itoa(d.Index)
}

// ParseDevice parses "cpu", "meta", "cuda" (meaning cuda:0) or "cuda:N"
// with N >= 0.
func ParseDevice(s string) (Device, error) {
	name, idx, hasIdx := strings.Cut(s, ":")
	switch name {
	case "cpu":
		if hasIdx {
			break
		}
		return CPU, nil
	case "meta":
		if hasIdx {
			break
		}
		return Meta, nil
	case "cuda":
		if !hasIdx {
			return CUDA(0), nil
		}
		n, err := strconv.Atoi(idx)
		if err != nil || idx[0] < '0' || idx[0] > '9' { // digits only
			break
		}
		return CUDA(n), nil
	}
	return Device{}, fmt.Errorf("tensor: invalid device %q", s)
}
