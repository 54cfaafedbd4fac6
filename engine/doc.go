// Package engine is the native backend: a rank actor per communicator
// over link actors (package actors and below), behind package backend's
// interfaces. It owns what turns a validated operation into the actors'
// work and what a communicator needs to exist:
//
//   - native.go: the Backend; an Op becomes a collective.Request in a
//     reusable room (Pooled), planned through the communicator's plan
//     cache and submitted to the rank actor, whose mailbox is the issue
//     order.
//   - rendezvous.go: ranks meet through the store under the
//     communicator's name; a split meets over its parent.
//   - peers.go: one connection per peer process, dialled on first use
//     and shared by a communicator and its splits; or, over a
//     transport.Fabric (the simulator's network), the fabric's own.
//   - environment.go: the process's network and store, as the
//     launcher's environment describes them.
//   - window.go: a window's memory, where its peers find it, the peers'
//     memory mapped for direct access, and the operations done there by
//     the caller (ApplyDirect).
//
// Driving loop of one blocking operation: the root package calls IssueIn
// with the Op and a room; request fills the room's Request (plan from the
// cache, tensors' bytes as blocks) and tells the rank actor; the actors
// run the schedule and call the Completion's Started, Finished and, once
// they hold nothing of it, Released, after which the caller reuses the
// room.
//
// The root package imports it to register it, to name its hints and
// limits, and to apply a window's operations on mapped memory; it must
// not import the root package.
package engine
