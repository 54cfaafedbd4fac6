// Package rma is `commnode rma`: one-sided communication through gocomms'
// RMA windows, timed as bench/peers/mpi_rma.c times Open MPI's, and
// checked across processes as torchcomms' WindowRmaTest checks windows.
//
// The bench (run.go) runs on a communicator it is given; rank 0 issues
// every operation on rank 1's window, and for each op and size
//
//	reset     (atomics) rank 1's actor zeroes the word; a barrier
//	warm-up   rank 0 runs Warmup ops
//	barrier   so that the clock starts with every rank there
//	timed     rank 0 runs Iters ops back to back (fewer at large sizes:
//	          Volume), between two readings of the clock
//	reduce    all-reduce of rank 0's time (max), so that every rank has
//	          the row
//	check     (with Check) a pattern moved the way the op moves bytes, or
//	          the values the atomics fetched, and the word they left;
//	          all-reduce of the wrong count (sum)
//
// The ops are mpi_rma.c's: put (a Put and a Flush of the target, so that
// each op is complete there), put_pipelined (Iters Puts, then one Flush),
// get (a Get, which returns with the bytes), fetch_and_op (FetchAndOp of
// one int64, Sum of 1) and compare_and_swap (CompareAndSwap of one int64
// that always succeeds). The rows print in mpi_rma.c's line format
// (report.go), so one parser reads both.
//
// The verification (ring.go) is torchcomms' WindowRmaTest ring on every
// count and dtype, and a check of the atomics from every rank on rank 0's
// counters. Both go on through wrong values, so that every rank completes
// the same operations, and report them through callbacks.
//
// What the target reads of its own window it reads after a notification
// from the origin, or through its own window's actor (a Put or a Get of
// itself): the actor applies operations one at a time, so either orders
// the read after what the origin did.
//
// It must not own the communicator (the caller joins and finalizes it) or
// write output of its own.
package rma
