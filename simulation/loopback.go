package simulation

import "time"

// Loopback is placeholder pending the fit.
func Loopback(ranks int) Topology {
	l := Link{Latency: 16 * time.Microsecond, Bandwidth: 1e9}
	return Topology{Nodes: 1, Intra: l, NIC: l, Oversubscription: 1, Overhead: 200 * time.Microsecond}
}
