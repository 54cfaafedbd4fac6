// Package link owns one actor per peer connection of a communicator. A link
// actor holds the transport.Conn to that peer, sends the frames operations
// hand it, and routes the frames that arrive: collective and
// point-to-point frames go to its Plane, a window's to the actor that
// registered a Route for them (those that arrive before it wait in the
// link's stash), and control frames to the parent (the rank actor).
//
// The driving loop:
//
//	Started        -> conn.Start(handler), or after a restart conn.Resume(redialled)
//	                  handler: direct frames -> plane; control frames -> parent;
//	                  others post *Delivered, errors *connFailed
//	*Send          -> conn.Send(frame)
//	*Route         -> forward stashed frames of that key, then later ones, up to its count
//	*Unroute       -> forget the key before its count is reached
//	*Delivered     -> plane | routed actor | stash | link frame (fin, ping)
//	*Release       -> tagRelease; later sends wait, for the parent to send on a new link
//	*Decline       -> tagDecline: the peer's end, which released, takes the link back
//	*connFailed    -> broken: panic for the supervisor to restart it after a backoff;
//	                  ended: parent gets *Failed; later sends are dropped
//	Stopping       -> conn.Close()
//
// Routing state lives outside the actor instance, in the producer's closure,
// so that a supervisor restart after a panic keeps stashed frames and routes.
//
// The link sends on a resume.Conn over its connections, which keeps what
// the peer has not acknowledged and sends it again on the connection the
// link redials after one breaks: the link keeps supervision (redial,
// backoff, silence, close), the connection the bookkeeping.
//
// Control frames (a rank's word to its peer: failures, probes,
// agreements) skip both link actors too: SendControl puts them on the
// connection while nothing waits in the link's mailbox to be sent, and
// the peer's handler hands them to its rank actor, unless its link has
// failed. A simulation floods a failure over millions of links.
//
// Collective and point-to-point frames go to the link's Plane (plane.go),
// shared with whatever runs the operation: the collective actor, or a
// collective.Direct off the actors, whose frames skip the link actors
// both ways, on the same lossless connection.
//
// A rank that no longer uses a link releases it (Release): each end
// sends tagRelease after its last frame, and the link ends once both
// have, telling its parent (Released) with what it was given meanwhile.
// Both ends then hold nothing for the pair, and the next frame between
// them goes on a new link and connection, as if the first had stayed. A
// parent whose operation holds its end to the end declines (Decline),
// and the end that released takes the link back (Declined): otherwise
// that operation could wait for the released end's next one, which would
// wait for the release.
//
// A link knows nothing of schedules or reductions, and never blocks.
package link
