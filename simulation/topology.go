package simulation

import (
	"fmt"
	"time"
)

// Link is one direction of a port: what a frame pays to cross it.
type Link struct {
	Latency   time.Duration
	Bandwidth float64 // bytes per second
}

func (l Link) validate(what string) error {
	if l.Latency < 0 || l.Bandwidth <= 0 {
		return fmt.Errorf("simulation: %s link needs latency >= 0 and bandwidth > 0, got %v and %g B/s", what, l.Latency, l.Bandwidth)
	}
	return nil
}

// Topology is the simulated machine: Nodes nodes of the same number of
// ranks each, ranks numbered node by node. Ranks of a node talk over Intra
// (NVLink-like: every rank has its own port into the node's switch); ranks
// of different nodes over their NICs (InfiniBand or RoCE-like, one per
// rank, as on a rail-optimised cluster) through a fabric whose bisection
// is Oversubscription times smaller than the NICs' sum.
//
// Every rank has a send and a receive port per kind of link, each serving
// one frame at a time in arrival order, so concurrent transfers share a
// port by taking turns frame by frame (frames are at most a schedule's
// chunk): that is where contention comes from. Overhead is the software
// cost of each frame on the sender, a rank's own time.
type Topology struct {
	Nodes            int
	Intra            Link
	NIC              Link
	Oversubscription float64 // >= 1
	Overhead         time.Duration
	// Retransmit is how long the transport waits before it sends a lost
	// frame again: a tuned fabric's retransmission timeout.
	Retransmit time.Duration
}

// DGXH100 is a cluster of DGX H100-like nodes: 8 ranks each, NVLink 4
// through NVSwitch (450 GB/s a direction per GPU), one 400 Gb/s NIC per
// GPU on a non-blocking rail-optimised fabric.
func DGXH100(nodes int) Topology {
	return Topology{
		Nodes:            nodes,
		Intra:            Link{Latency: 2 * time.Microsecond, Bandwidth: 450e9},
		NIC:              Link{Latency: 5 * time.Microsecond, Bandwidth: 50e9},
		Oversubscription: 1,
		Overhead:         time.Microsecond,
		Retransmit:       time.Millisecond,
	}
}

// RailCluster is a rail-optimised cluster of nodes with NVLink inside and
// 200 Gb/s NICs on a fabric oversubscribed 2:1 above the rails. It keeps
// DGXH100's NVLink latency, per-frame overhead and retransmit timeout.
func RailCluster(nodes int) Topology {
	t := DGXH100(nodes)
	t.Intra.Bandwidth = 300e9
	t.NIC = Link{Latency: 6 * time.Microsecond, Bandwidth: 25e9}
	t.Oversubscription = 2
	return t
}

func (t Topology) validate(ranks int) error {
	if t.Nodes < 1 || ranks%t.Nodes != 0 {
		return fmt.Errorf("simulation: %d ranks do not spread evenly over %d nodes", ranks, t.Nodes)
	}
	if t.Oversubscription < 1 {
		return fmt.Errorf("simulation: oversubscription %g is below 1", t.Oversubscription)
	}
	if t.Overhead < 0 || t.Retransmit < 0 {
		return fmt.Errorf("simulation: negative per-frame overhead %v or retransmit timeout %v", t.Overhead, t.Retransmit)
	}
	if err := t.Intra.validate("intra-node"); err != nil {
		return err
	}
	return t.NIC.validate("NIC")
}
