//go:build linux && cgo

package gpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gocomms/gocomms/internal/errkind"
)

// Devices lists the GPUs of this host with their NVLinks. It starts NVML
// and shuts it down before returning. Where there is no GPU to use, the
// error matches ErrUnavailable and says why.
func Devices() ([]Device, error) {
	return devices(nvml.New())
}

// devices queries lib, which tests replace.
func devices(lib nvml.Interface) ([]Device, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, ErrNoLibrary
	default:
		return nil, errkind.Of("gpu: NVML cannot start: "+ret.Error(), ErrUnavailable, nil)
	}
	// The devices found stand whatever Shutdown says.
	defer lib.Shutdown()

	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("gpu: counting devices: %w", ret)
	}
	if count == 0 {
		return nil, ErrNoDevice
	}
	devs := make([]Device, count)
	for i := range devs {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("gpu: device %d: %w", i, ret)
		}
		d, err := describe(dev)
		if err != nil {
			return nil, fmt.Errorf("gpu: device %d: %w", i, err)
		}
		d.Index = i
		devs[i] = d
	}
	return devs, nil
}

// describe reads one device. Memory and MIG mode are left zero where the
// device does not support reporting them.
func describe(dev nvml.Device) (Device, error) {
	var d Device
	var ret nvml.Return
	if d.Name, ret = dev.GetName(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("name: %w", ret)
	}
	if d.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("UUID: %w", ret)
	}
	pci, ret := dev.GetPciInfo()
	if ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("PCI info: %w", ret)
	}
	d.PCIBusID = busID(pci)
	mem, ret := dev.GetMemoryInfo()
	switch ret {
	case nvml.SUCCESS:
		d.MemoryBytes = mem.Total
	case nvml.ERROR_NOT_SUPPORTED:
	default:
		return Device{}, fmt.Errorf("memory: %w", ret)
	}
	if d.ComputeMajor, d.ComputeMinor, ret = dev.GetCudaComputeCapability(); ret != nvml.SUCCESS {
		return Device{}, fmt.Errorf("compute capability: %w", ret)
	}
	current, _, ret := dev.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
		d.MIG = current == nvml.DEVICE_MIG_ENABLE
	case nvml.ERROR_NOT_SUPPORTED:
	default:
		return Device{}, fmt.Errorf("MIG mode: %w", ret)
	}
	links, err := nvLinks(dev)
	if err != nil {
		return Device{}, err
	}
	d.NVLinks = links
	return d, nil
}

// nvLinks reads the state and peer of every link the device supports.
// NVML answers NOT_SUPPORTED or INVALID_ARGUMENT for link numbers the
// device does not have, and an inactive link has no peer to report.
func nvLinks(dev nvml.Device) ([]NVLink, error) {
	var links []NVLink
	for link := range nvml.NVLINK_MAX_LINKS {
		state, ret := dev.GetNvLinkState(link)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT:
			continue
		default:
			return nil, fmt.Errorf("NVLink %d state: %w", link, ret)
		}
		l := NVLink{Link: link, Active: state == nvml.FEATURE_ENABLED}
		if l.Active {
			peer, ret := dev.GetNvLinkRemotePciInfo(link)
			switch ret {
			case nvml.SUCCESS:
				l.PeerPCIBusID = busID(peer)
			case nvml.ERROR_NOT_SUPPORTED:
			default:
				return nil, fmt.Errorf("NVLink %d peer: %w", link, ret)
			}
		}
		links = append(links, l)
	}
	return links, nil
}

// busID is a PCI info's bus ID as a Go string ("00000000:18:00.0").
func busID(pci nvml.PciInfo) string {
	b := make([]byte, 0, len(pci.BusId))
	for _, c := range pci.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}
