// Package storetest is the conformance suite for store.Store
// implementations, in the manner of testing/fstest: every store (in-memory,
// the TCPStore-compatible client, the simulator's) runs
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return newMyStore(t) })
//	}
//
// Start reading at Run, which lists the subtests. They pin down PyTorch's
// c10d semantics as the store package documents them: waits that end when a
// key is created (by Set, Add, Append or MultiSet) and never earlier, ctx
// bounds on waits with errors that name the key, decimal counters,
// CompareSet's four cases, prefix isolation, copies in and out, and Close
// releasing waiters with store.ErrClosed.
//
// The suite asserts only the contract, not how a store meets it: it never
// assumes a store is in-process, and counts keys relative to what a fresh
// store already holds. It sleeps only in the bounded poll that checks for
// leaked goroutines. It must not import a concrete store other than through
// store.WithPrefix.
package storetest
