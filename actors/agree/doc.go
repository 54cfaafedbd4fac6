// Package agree decides one value among the ranks of a communicator that
// survive failures, the way ULFM's MPI_Comm_agree and MPI_Comm_shrink
// need: every survivor that decides, decides the same flags (the AND of
// the survivors' flags) and the same set of failed ranks, even when
// ranks, coordinators included, fail while it runs.
//
// The protocol is Paxos with a fixed order of leaders. The coordinator is
// the lowest rank a node believes alive; its ballot counts rounds, then
// its rank. It asks every rank it believes alive to promise the ballot
// (Prepare, Promise), which brings back their proposals and any value
// they accepted under an earlier ballot; proposes the latest such value,
// or else the AND of the flags and the union of the failed sets (Accept,
// Accepted); and decides once every rank it believes alive accepted
// (Decide). A value is decided only after every survivor accepted it, so a
// coordinator that takes over learns it in its first phase and decides it
// again: the decision is uniform. Quorums are all the ranks a coordinator
// believes alive: a failure the links detect is final (the link to that
// rank never carries a frame again), so two coordinators' quorums share
// every survivor both believe alive.
//
// A Node is the protocol at one rank, a pure state machine: the rank
// actor feeds it what arrives (Receive), the failures its links detect
// (Fail), and sends what it returns. Messages to the node's own rank come
// back in the returned slice too, for the caller to feed in.
//
// Costs: a round is 5 messages per rank it reaches, about 5N; each
// coordinator that fails before deciding adds a round.
package agree
