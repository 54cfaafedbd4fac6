// Package collective owns the actor that runs a rank's operations, one at
// a time: it executes an algorithms.Schedule step by step over the
// communicator's link actors and completes the operation's Work. It runs
// the next operation its rank hands it once one succeeded, reusing its
// buffers, and stops once one failed.
//
// The driving loop, around a pure algorithms.Progress:
//
//	Started, *Request
//	            -> attach to the plane of each peer it receives from, which
//	               hands it the op's frames; arm the timeout; run the steps
//	               Progress says are ready
//	*Delivered  -> check the frame against this op (signature, length), hand
//	               it to Progress.Arrive, run what became ready
//	run(step)   -> Send: copy the region into a pooled payload, give it to
//	               the link; Recv: copy the payload into the region;
//	               RecvReduce: dst = local ⊕ payload; Copy: local copy;
//	               then Progress.Complete(step) and run what became ready
//	Done        -> finish the result (Avg, PreMulSum), complete the Work,
//	               tell the parent, wait for the next operation
//	*Fail, timeout, a mismatched frame -> fail the Work with an OpError,
//	               unroute, stop; a mismatch is also reported to every rank
//	               as a control frame
//
// Bulk data never passes through a mailbox by value: frames carry pooled
// payloads whose ownership moves with the message, and regions are slices of
// the caller's tensors, owned by this actor until it completes the Work.
//
// Direct runs operations the same way outside any actor, while the rank
// lends it its turn: on the goroutine that issues one and on those that
// bring its frames (direct.go); those issued meanwhile queue behind it
// there and start as it ends. The schedule itself runs in one executor
// (executor.go), which both drive: a state machine that takes an
// operation's events and hands its frames to an outbox, and holds its
// memory, Progress and held frames. A Direct operation that times out
// is adopted by the actor, executor and all, which probes, and those
// queued behind it go to the rank with it. Transcripts in
// testdata/executor replay the executor event by event.
//
// A lazy collective (Request.Lazy, on a rank that releases its links)
// starts with the links its rank has and asks for the others as it comes
// to send to them (NeedLink, Linked), parking those sends meanwhile; it
// lets go of a peer's link after a run of steps with it (runs.go), for
// good after the last (DoneWith), and follows the rank when the peer
// released first (Unlinked).
//
// This package must not import net, and takes time only from the runtime.
package collective
