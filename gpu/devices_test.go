package gpu

import (
	"errors"
	"strings"
	"testing"
)

// These run Devices on this host, whatever it has: no driver, a build
// without cgo, or real GPUs.

func TestDevicesUnavailableSaysWhy(t *testing.T) {
	devs, err := Devices()
	if err == nil {
		t.Skipf("this host has %d GPUs", len(devs))
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Devices: %v, want an error matching ErrUnavailable on a host without GPUs", err)
	}
	if devs != nil {
		t.Errorf("Devices returned %d devices with its error", len(devs))
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "gpu: ") || msg == ErrUnavailable.Error() {
		t.Errorf("error %q does not say why", msg)
	}
}

func TestDevicesOnGPUHost(t *testing.T) {
	devs, err := Devices()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("needs an NVIDIA GPU and its driver: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	buses := map[string]bool{}
	for i, d := range devs {
		if d.Index != i {
			t.Errorf("device %d has index %d", i, d.Index)
		}
		if d.Name == "" || !strings.HasPrefix(d.UUID, "GPU-") || d.PCIBusID == "" || d.ComputeMajor == 0 {
			t.Errorf("device %d incomplete: %+v", i, d)
		}
		if buses[pciKey(d.PCIBusID)] {
			t.Errorf("device %d repeats PCI bus %s", i, d.PCIBusID)
		}
		buses[pciKey(d.PCIBusID)] = true
		for _, l := range d.NVLinks {
			if !l.Active && l.PeerPCIBusID != "" {
				t.Errorf("device %d: inactive link %d has peer %s", i, l.Link, l.PeerPCIBusID)
			}
		}
	}
	for _, line := range Describe(devs) {
		t.Log(line)
	}
}
