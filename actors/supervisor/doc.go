// Package supervisor owns how the engine reacts when an actor fails: which
// failures are restarted, after what backoff, and when a child that keeps
// failing is stopped instead so that its parent fails the work it carried.
//
// Strategy is a protoactor SupervisorStrategy whose every decision reads the
// runtime's clock, never wall time, so the simulator replays restarts bit for
// bit (protoactor's own strategies stamp time.Now and draw global random
// backoff noise). The bookkeeping is a plain struct, budget, stepped by tests
// directly.
//
// A rank actor installs a Strategy for its link actors; the public package
// installs one as the guardian of rank actors, since nothing but the runtime
// is spawned at the root. This package must not import net.
package supervisor
