// Package actors owns the runtime seam of the engine: the clock, the
// dispatcher and mailbox, the seeded random source, the logger and the actor
// system that every actor under actors/ takes instead of reaching for wall
// time, goroutines or global randomness.
//
// Start reading at Runtime. Everything that spawns an actor builds its Props
// with Runtime.Props, the one place that applies the dispatcher and mailbox;
// nothing else calls actor.PropsFromProducer. Timeouts are messages: an actor
// arms Runtime.After and receives the message through its mailbox, never a
// protoactor future or receive timeout, so the simulator's virtual clock and
// single event loop drive the same code bit for bit.
//
// NewRuntime builds the real runtime: wall clock, goroutine dispatcher,
// allocation-free mailboxes and an entropy-seeded source. Its few lines
// that touch wall time or start goroutines are marked "nondeterministic:".
// The simulator supplies its own Clock, Dispatcher, Mailbox and Rand.
//
// This package must not import net, and must not know about collectives.
package actors
