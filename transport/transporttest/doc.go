// Package transporttest is the conformance suite for transport.Network
// implementations, in the manner of testing/fstest and x/net/nettest: every
// transport (in-process, TCP, shared memory, the simulated network) runs
//
//	func TestConformance(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T) transport.Network { return newMyNetwork(t) })
//	}
//
// and benchmarks itself with BenchPingPong and BenchStream, so that figures
// for different transports measure the same thing.
//
// Start reading at Run, which lists the subtests by what they pin down:
// connection setup, data (FIFO order with headers and payloads intact,
// concurrency, handlers that send from inside HandleFrame, frames queued
// before Start) and teardown (the peer learns of a close exactly once, after
// the frames that preceded it). The recorder handler notices contract
// violations, such as overlapping calls or frames after HandleError, instead
// of failing from a goroutine it does not own.
//
// The suite asserts only what the transport contract promises: it never
// assumes delivery is synchronous, that Dial completes before Accept, or
// how an error reads beyond errors.Is(err, transport.ErrClosed). It sleeps
// only in the bounded poll that checks for leaked goroutines, and its waits
// time out only when a transport loses something. It must not import a
// concrete transport.
package transporttest
