// Package store owns the store seam: the rendezvous key-value store that
// ranks use to find each other and bootstrap communicators. It defines
// Store, whose semantics are those of PyTorch's c10d Store, Memory, the
// in-memory twin used by tests, the simulator and single-process runs, and
// WithPrefix, the scoping wrapper (PyTorch's PrefixStore). A client and
// server for PyTorch's TCPStore wire protocol implement the same interface;
// every implementation passes the suite in storetest.
//
// Start reading at Store in store.go. A typical bootstrap:
//
//	s := store.WithPrefix(base, "comm/"+id)
//	s.Set(ctx, "rank/3", addr)              // publish
//	n, _ := s.Add(ctx, "joined", 1)         // count arrivals
//	addrs, _ := s.MultiGet(ctx, "rank/0", "rank/1") // wait for everyone
//
// Semantics worth knowing, all as in PyTorch: Add keeps counters as
// decimal text and treats a missing key as 0; CompareSet on a missing key
// with a non-empty expected value stores nothing and returns expected;
// NumKeys counts every key, whatever the prefix. Waits (Get, Wait,
// MultiGet) end when a write creates the key, and ctx bounds them; calls
// that never wait return at once.
//
// This package must stay transport-agnostic: nothing here may assume the
// store is in-process, so that a TCP client can implement Store with the
// same meaning. Memory must not poll or sleep; a wait is a channel closed
// by the write that creates its key.
package store
