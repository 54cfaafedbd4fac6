// Package topo joins two transport.Networks into one that picks, per
// peer, by where the peer is: a local network (shared memory, nvl) for
// peers on this host, a remote one (TCP) for the rest, in the same
// communicator, so that the hierarchical schedules move their intra-host
// steps through memory and only the inter-host ones over the wire.
//
// A listener listens on both and its address names both, joined by "|":
//
//	10.0.0.7:41234|nvl:5f0dcaf9….4026531833/bc7f…
//
// Dial takes the local part when the reachability test says the peer is
// on this host, and the remote part otherwise, or when the local dial is
// refused (a peer in another network namespace of the same kernel, say).
// Either part may be absent: a network configured with only one of the
// two listens and dials on that one.
//
// This package must not interpret frames or start anything but the two
// goroutines per listener that take connections from its two parts.
package topo
