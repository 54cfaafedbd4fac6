/*
Package algorithms is the pure core of gocomms: it decides, for one rank of a
collective, which bytes go where and in which order, and tracks a run of that
plan. It does nothing itself.

Like etcd's raft package, it owns the logic and none of the machinery. Given a
Spec (rank, size, counts, element size, kind, algorithm) Build returns a
Schedule: a DAG of Steps, each a Send, Recv, RecvReduce or Copy over element
ranges (Regions) of the rank's Input, Output and Scratch buffers. An executor
elsewhere carries the steps out over real links; a simulator can replay them.
Progress is the executor's state machine for one run: it is told about
arrivals and completions and answers with the steps that have become ready.

# What the package must not do

No goroutines, channels, locks, I/O, clocks, randomness or logging, and no
imports beyond the standard library. Everything here is a deterministic
function of its arguments, which is what lets every rank compute its peers'
expectations without asking them, and what lets tests run all ranks of a
collective in one goroutine under any delivery order. Panics mean a broken
internal invariant (a generator producing an out-of-range region, an executor
completing a step twice); bad input gets an error from Build.

# The driving loop

An executor runs a schedule like this (error handling and buffer mapping
elided):

	sched, err := algorithms.Build(spec)
	if err != nil { ... }
	p := algorithms.NewProgress(sched)
	ready := p.Start(nil)
	for !p.Done() {
		for _, i := range ready {
			start(sched.Steps[i])      // Send: read Src and transmit it with Tag;
			                           // Recv: write the stashed payload to Dst;
			                           // RecvReduce: Dst = Src ⊕ payload;
			                           // Copy: Dst = Src.
		}
		ready = ready[:0]
		select {
		case m := <-inbox: // a message from m.From carrying m.Tag
			var step int
			ready, step, err = p.Arrive(m.From, m.Tag, ready)
			if err != nil { ... } // unexpected or duplicate message
			// check len(m.Payload) == sched.Steps[step].Dst.Len*ElemSize and stash it
		case i := <-finished:
			ready = p.Complete(i, ready)
		case <-timeout:
			waiting := p.Waiting(nil) // "timed out waiting for ranks …"
		}
	}

Messages may arrive before their step is ready (even before Start); the
executor holds the payload until Progress reports the step. Links need not be
FIFO: the tag alone identifies a message. Progress.Reset rewinds for the next
run of a cached schedule; Start, Arrive and Complete do not allocate when the
ready slice has room.

# Glossary

  - Block: a contiguous run of elements inside a buffer; a buffer is a list of
    blocks (Spec.Blocks gives the layout per kind). Offsets and lengths count
    elements, never bytes.
  - Region: Buf, Block, Off, Len; a range inside one block.
  - Send: read Src and send it to Peer. Message length is Src.Len.
  - Recv: receive the message from Peer into Dst. Expected length is Dst.Len.
  - RecvReduce: Dst = Src ⊕ message from Peer, elementwise; Src may be Dst.
  - Copy: Dst = Src on this rank.
  - Tag: per (sender, receiver) ordinal of a message in program order; the
    k-th Send from A to B matches the k-th Recv or RecvReduce on B from A.
  - Deps: earlier steps that must complete first. The Builder derives them
    from region overlap: reads wait for the last write (RAW), writes wait for
    the reads since the last write (WAR) or else the last write (WAW).
  - Chunk: a piece of at most Spec.ChunkElems elements. Every message is one
    chunk, so a large tensor pipelines: chunk j of step s+1 waits only for
    chunk j of step s.
  - Token: the zero-length region on a zero-length Scratch block that carries
    zero-byte messages (barrier notifications). The executor sends a frame
    with an empty payload for it and writes nothing on receipt. It is the
    only zero-length region a schedule contains.
  - Scratch: per-run memory the executor allocates, one block per entry of
    Schedule.Scratch.

Zero-length data regions never appear: generators skip empty pieces, and both
ends skip identically because both know the counts.
*/
package algorithms
