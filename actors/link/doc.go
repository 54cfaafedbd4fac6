// Package link owns one actor per peer connection of a communicator. A link
// actor holds the transport.Conn to that peer, sends the frames operations
// hand it, and routes the frames that arrive: collective and
// point-to-point frames go to its Plane, a window's to the actor that
// registered a Route for them (those that arrive before it wait in the
// link's stash), and control frames to the parent (the rank actor).
//
// The driving loop:
//
//	Started        -> conn.Start(handler)   handler posts *Delivered / *connFailed to self
//	*Send          -> conn.Send(frame)
//	*Route         -> forward stashed frames of that key, then later ones, up to its count
//	*Unroute       -> forget the key before its count is reached
//	*Delivered     -> plane | routed actor | stash | parent (control)
//	*connFailed    -> parent gets *Failed; later sends are dropped
//	Stopping       -> conn.Close()
//
// Routing state lives outside the actor instance, in the producer's closure,
// so that a supervisor restart after a panic keeps stashed frames and routes.
//
// Collective and point-to-point frames go to the link's Plane (plane.go),
// shared with whatever runs the operation: the collective actor, or a
// collective.Direct off the actors, whose frames skip the link actors
// both ways over lossless connections.
//
// A link knows nothing of schedules or reductions, and never blocks.
package link
