package gpu

import "testing"

func links(active, inactive int) []NVLink {
	var ls []NVLink
	for i := range active + inactive {
		ls = append(ls, NVLink{Link: i, Active: i < active})
	}
	return ls
}

func TestPeerBandwidth(t *testing.T) {
	h100 := Device{ComputeMajor: 9, NVLinks: links(18, 0)}
	a100 := Device{ComputeMajor: 8, NVLinks: links(12, 0)}
	degraded := Device{ComputeMajor: 9, NVLinks: links(16, 2)}
	l4 := Device{ComputeMajor: 8, ComputeMinor: 9}
	for _, tc := range []struct {
		name string
		devs []Device
		want float64
	}{
		{"none", nil, 0},
		{"a DGX H100's", []Device{h100, h100}, 450e9},
		{"an HGX A100's", []Device{a100, a100, a100}, 300e9},
		{"the least, with two links down", []Device{h100, degraded}, 400e9},
		{"PCIe without NVLink", []Device{l4, l4}, PCIeBandwidth},
		{"PCIe where one has no NVLink", []Device{h100, l4}, PCIeBandwidth},
	} {
		if got := PeerBandwidth(tc.devs); got != tc.want {
			t.Errorf("%s: PeerBandwidth = %g, want %g", tc.name, got, tc.want)
		}
	}
}
