package gpu

import (
	"slices"
	"testing"
)

func TestDescribe(t *testing.T) {
	const gib = 1 << 30
	devs := []Device{
		{
			Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-0a", PCIBusID: "00000000:18:00.0",
			MemoryBytes: 80 * gib, ComputeMajor: 9, ComputeMinor: 0,
			NVLinks: []NVLink{
				{Link: 0, Active: true, PeerPCIBusID: "00000000:2A:00.0"},
				{Link: 1, Active: true, PeerPCIBusID: "00000000:2A:00.0"},
				{Link: 2, Active: true, PeerPCIBusID: "00000000:2A:00.0"},
				{Link: 3, Active: false},
				{Link: 4, Active: true, PeerPCIBusID: "00000000:2A:00.0"},
				{Link: 5, Active: true, PeerPCIBusID: "00000000:C1:00.0"},
			},
		},
		{
			// The peer's bus ID in NVML's legacy form, lower case: still gpu 0.
			Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1b", PCIBusID: "00000000:2A:00.0",
			MemoryBytes: 80 * gib, ComputeMajor: 9, ComputeMinor: 0, MIG: true,
			NVLinks: []NVLink{
				{Link: 0, Active: true, PeerPCIBusID: "0000:18:00.0"},
				{Link: 1, Active: true, PeerPCIBusID: "0000:18:00.0"},
				{Link: 2, Active: true},
			},
		},
		{
			Index: 2, Name: "NVIDIA L4", UUID: "GPU-2c", PCIBusID: "00000000:3b:00.0",
			ComputeMajor: 8, ComputeMinor: 9,
		},
	}
	want := []string{
		"0 NVIDIA H100 80GB HBM3 (GPU-0a, PCI 00000000:18:00.0), 80.0 GiB, compute 9.0; NVLink: gpu 1 (links 0-2,4), 00000000:C1:00.0 (link 5), 1 inactive",
		"1 NVIDIA H100 80GB HBM3 (GPU-1b, PCI 00000000:2A:00.0), 80.0 GiB, compute 9.0, MIG; NVLink: gpu 0 (links 0-1), unknown peer (link 2)",
		"2 NVIDIA L4 (GPU-2c, PCI 00000000:3b:00.0), compute 8.9; no NVLink",
	}
	got := Describe(devs)
	if !slices.Equal(got, want) {
		t.Fatalf("Describe:\n got %q\nwant %q", got, want)
	}
}

func TestDescribeInactiveOnly(t *testing.T) {
	got := Describe([]Device{{Name: "NVIDIA A100-SXM4-40GB", UUID: "GPU-x", PCIBusID: "00000000:07:00.0",
		MemoryBytes: 40 << 30, ComputeMajor: 8, NVLinks: []NVLink{{Link: 0}, {Link: 1}}}})
	want := []string{"0 NVIDIA A100-SXM4-40GB (GPU-x, PCI 00000000:07:00.0), 40.0 GiB, compute 8.0; NVLink: 2 inactive"}
	if !slices.Equal(got, want) {
		t.Fatalf("Describe:\n got %q\nwant %q", got, want)
	}
}

func TestDescribeNone(t *testing.T) {
	if got := Describe(nil); len(got) != 0 {
		t.Fatalf("Describe(nil) = %q, want no lines", got)
	}
}
