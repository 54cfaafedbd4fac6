//go:build linux && cgo

package gpu

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// These drive devices through go-nvml's mocks: what NVML answers on hosts
// this test does not run on.

func TestDevicesNoLibrary(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	_, err := devices(lib)
	if !errors.Is(err, ErrNoLibrary) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("devices: %v, want ErrNoLibrary, matching ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Errorf("error %q does not name the library", err)
	}
	if n := len(lib.ShutdownCalls()); n != 0 {
		t.Errorf("Shutdown called %d times after a failed Init", n)
	}
}

func TestDevicesDriverNotLoaded(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }}
	_, err := devices(lib)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNoLibrary) {
		t.Fatalf("devices: %v, want ErrUnavailable but not ErrNoLibrary", err)
	}
	if !strings.HasPrefix(err.Error(), "gpu: NVML cannot start: ") {
		t.Errorf("error %q does not say NVML cannot start", err)
	}
}

func TestDevicesNoDevice(t *testing.T) {
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
	}
	if _, err := devices(lib); !errors.Is(err, ErrNoDevice) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("devices: %v, want ErrNoDevice, matching ErrUnavailable", err)
	}
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
}

func TestDevicesTwoLinked(t *testing.T) {
	const gib = 1 << 30
	// Device 0: links 0-2 up to device 1, link 3 down, 4 and above absent.
	// Device 1: no NVLink, memory not reported, MIG on.
	dev0 := fakeDevice("NVIDIA H100 80GB HBM3", "GPU-0a", "00000000:18:00.0", 80*gib, 9, 0, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS)
	dev0.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
		switch {
		case link < 3:
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		case link == 3:
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	dev0.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
		return pciInfo("00000000:2A:00.0"), nvml.SUCCESS
	}
	dev1 := fakeDevice("NVIDIA H100 PCIe", "GPU-1b", "00000000:2A:00.0", 0, 9, 0, nvml.DEVICE_MIG_ENABLE, nvml.ERROR_NOT_SUPPORTED)
	dev1.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	lib := fakeLib(dev0, dev1)

	got, err := devices(lib)
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{
		{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-0a", PCIBusID: "00000000:18:00.0",
			MemoryBytes: 80 * gib, ComputeMajor: 9, ComputeMinor: 0,
			NVLinks: []NVLink{
				{Link: 0, Active: true, PeerPCIBusID: "00000000:2A:00.0"},
				{Link: 1, Active: true, PeerPCIBusID: "00000000:2A:00.0"},
				{Link: 2, Active: true, PeerPCIBusID: "00000000:2A:00.0"},
				{Link: 3},
			}},
		{Index: 1, Name: "NVIDIA H100 PCIe", UUID: "GPU-1b", PCIBusID: "00000000:2A:00.0",
			ComputeMajor: 9, ComputeMinor: 0, MIG: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("devices:\n got %+v\nwant %+v", got, want)
	}
	if n := len(dev0.GetNvLinkStateCalls()); n != nvml.NVLINK_MAX_LINKS {
		t.Errorf("device 0: %d link states asked, want %d", n, nvml.NVLINK_MAX_LINKS)
	}
	if n := len(dev0.GetNvLinkRemotePciInfoCalls()); n != 3 {
		t.Errorf("device 0: %d peers asked, want 3 (the active links only)", n)
	}
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
}

func TestDevicesQueryFails(t *testing.T) {
	dev := fakeDevice("NVIDIA A100", "GPU-0", "00000000:07:00.0", 40<<30, 8, 0, 0, nvml.SUCCESS)
	dev.GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	lib := fakeLib(dev)
	_, err := devices(lib)
	if !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("devices: %v, want ERROR_GPU_IS_LOST, not ErrUnavailable", err)
	}
	if !strings.HasPrefix(err.Error(), "gpu: device 0: name: ") {
		t.Errorf("error %q does not name the device and the query", err)
	}
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times after a failed query, want 1", n)
	}
}

// fakeDevice answers every query devices makes but the NVLink ones.
func fakeDevice(name, uuid, bus string, memory uint64, major, minor, mig int, memRet nvml.Return) *mock.Device {
	return &mock.Device{
		GetNameFunc:    func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetUUIDFunc:    func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return pciInfo(bus), nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: memory}, memRet
		},
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) { return major, minor, nvml.SUCCESS },
		GetMigModeFunc:               func() (int, int, nvml.Return) { return mig, mig, nvml.SUCCESS },
	}
}

// fakeLib is an NVML that starts and lists devs.
func fakeLib(devs ...*mock.Device) *mock.Interface {
	return &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return devs[i], nvml.SUCCESS
		},
	}
}

func pciInfo(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	for i := range len(bus) {
		p.BusId[i] = int8(bus[i])
	}
	return p
}
