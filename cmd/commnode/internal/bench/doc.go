// Package bench is `commnode bench`: nccl-tests for gocomms. It times
// collectives over a sweep of sizes on a communicator it is given, checks
// their results, and formats rows as nccl-tests prints them.
//
// For each op of the Config and each size, every rank runs (run.go)
//
//	plan      views of two buffers allocated once for the largest size
//	warm-up   Warmup ops issued back to back, then waited for
//	barrier   so that ranks start the clock together
//	timed     Iters ops issued back to back, then waited for; this rank's
//	          time per op is the elapsed time over Iters
//	check     (with Check) inputs filled with a pattern, one more op, and
//	          every element this rank holds compared with a reference
//	reduce    all-reduce of the time (max) and of the wrong count (sum),
//	          so that every rank reports the same row
//
// Sizes, counts and bandwidths follow nccl-tests (op.go): a size is the
// larger of a rank's send and receive buffers; ops that split the buffer
// among ranks report one rank's block as the count; algbw is size over
// time and busbw is algbw times the op's bus factor.
//
// The reference (check.go) is exact: patterns are small integers chosen
// per dtype and reduction so that any combining order gives the same bits,
// and reductions are recomputed with package reduce in rank order.
//
// It must not own the communicator (the caller joins and finalizes it) or
// write output of its own: Run hands rows to a callback, and Table and
// WriteJSON format them.
package bench
