package gpu

// nvlinkRate is one NVLink's bandwidth in each direction, in bytes per
// second, by the compute capability (major) of the GPUs of its
// generation: NVLink 1 on Pascal, 2 on Volta, 3 on Ampere, 4 on Hopper,
// 5 on Blackwell. Ada and Turing parts have none, or a bridge of two.
var nvlinkRate = map[int]float64{6: 20e9, 7: 25e9, 8: 25e9, 9: 25e9, 10: 50e9}

// PCIeBandwidth is what a GPU without NVLink has to its peers in each
// direction: a PCIe 4.0 x16 link's, less its protocol's overhead.
const PCIeBandwidth = 25e9

// NVLinkBandwidth returns the device's NVLink bandwidth in each direction,
// in bytes per second: its active links times one link's rate for its
// generation; 0 without an active link.
func (d Device) NVLinkBandwidth() float64 {
	active := 0
	for _, l := range d.NVLinks {
		if l.Active {
			active++
		}
	}
	return float64(active) * nvlinkRate[d.ComputeMajor]
}

// PeerBandwidth returns the bandwidth every one of devs has to the others
// in each direction, in bytes per second: the least of their NVLink
// bandwidths, or PCIeBandwidth where one has no NVLink; 0 for no devices.
func PeerBandwidth(devs []Device) float64 {
	if len(devs) == 0 {
		return 0
	}
	least := 0.0
	for i, d := range devs {
		bw := d.NVLinkBandwidth()
		if bw == 0 {
			return PCIeBandwidth
		}
		if i == 0 || bw < least {
			least = bw
		}
	}
	return least
}
