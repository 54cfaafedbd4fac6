// Package window owns one-sided communication: one actor per RMA window
// per rank, which applies the operations that reach its memory in the
// order its mailbox receives them, and issues this rank's operations on
// other ranks' windows over the rank's links.
//
// Every remote operation travels in one frame of kind transport.Window,
// whose header names the window (Seq) and the operation (Tag), and whose
// Sig numbers the origin's operations; the target's actor applies it and,
// if the operation returns something (a get, a fetch, a flush), answers
// with a reply frame of the same number. Because a link delivers its
// frames in order and once, and the target applies them one at a time,
// operations from one origin to one target are applied in issue order,
// and each atomically with respect to every other operation the target's
// actor applies (wire.go, apply.go). The numbers let a target drop a
// frame it has applied already, should a retransmission ever deliver it
// twice.
//
// The actor does not know transports: it asks its parent, the rank, for
// the link to a peer (NeedLink), and the rank routes the window's frames
// from every link to it. Start reading at actor.go; docs/RMA.md states the
// semantics.
package window
