// Package mux carries many virtual connections over one transport.Conn,
// one per communicator id, so that communicators split from a parent reuse
// the parent's connection to each peer instead of dialling new ones.
//
// Start reading at Mux in mux.go, then vconn in conn.go. Both ends of a
// connection wrap it, and open the comms they share:
//
//	m := mux.New(conn)     // owns conn from now on, and Starts it
//	c, err := m.Open(comm) // a transport.Conn for one communicator
//	c.Start(handler)       // frames for comm that came earlier go first
//	c.Send(transport.Frame{Header: transport.Header{Comm: comm, ...}, Payload: p})
//	c.Close()              // the peer's conn for comm ends; the others stay
//	m.Close()              // ends the connection and every virtual conn
//
// Frames are routed by Header.Comm, which every frame of the engine already
// carries, so a virtual conn adds no header and copies nothing: Send checks
// the header and hands the frame, lent payload and all, to the underlying
// conn; the receiving Mux appends it to its comm's queue and, when that
// comm is started and idle, calls its handler right away, in the
// underlying transport's goroutine. The Mux starts no goroutines.
//
// # Wire
//
// Data frames travel unchanged. Closing a virtual conn sends one frame of
// the Mux's own after the conn's last data frame:
//
//	Header{Comm: comm, Kind: KindClose}, no payload
//
// KindClose (255) lies outside the engine's kinds (1 to 4; 0x81 to 0x84 flagged), so no comm id
// is reserved. Both ends must use a Mux: a plain conn would hand the marker
// to its handler as a frame.
//
// # Virtual conns
//
// A virtual conn keeps the transport.Conn contract, as transporttest
// checks it; beyond it:
//
//   - Send refuses, with ErrHeader, a frame whose Comm is not the conn's or
//     whose Kind is KindClose, rather than rewrite it: a frame sent on the
//     wrong communicator's conn is a bug to report, not to hide.
//   - Close sends the marker and the peer's conn for the comm reports
//     transport.ErrClosed after every frame sent before it. The underlying
//     conn and the other comms stay open.
//   - A comm can be opened once in a Mux's life. Closed comms stay known,
//     at a small record each, so that frames a peer sent in a race with the
//     close are dropped instead of held for an Open that never comes.
//   - When the underlying conn fails, every virtual conn, and every one
//     opened later, reports that error after the frames it already has,
//     and its Sends fail.
//   - A virtual conn is a transport.Borrower when the underlying conn is
//     one: lent payloads pass through it untouched.
//   - Virtual conns are no transport.Drainer: Close hands the marker to the
//     underlying conn before it returns, so a virtual conn has nothing of
//     its own left to wait for. The bytes leave with the underlying conn's:
//     a process about to exit closes the Mux and waits on Mux.Drained.
//
// # Held frames
//
// The peer may send on a comm before this end opens it, for instance the
// first frames of a collective on a freshly split communicator. Such
// frames, and the peer's close marker, are held and delivered in order by
// the Open conn's Start. What is held, over all comms not yet opened, is
// bounded by WithMaxHeld (64 MiB by default): a frame beyond it fails the
// whole Mux with ErrHeldLimit and closes the underlying conn, since a peer
// that runs that far ahead is out of step, and waiting would only grow
// memory without bound.
//
// This package must not interpret headers beyond Comm and Kind, start
// goroutines, log, or dial: who wraps which conn, and which comms both ends
// open, is for the layer above to decide.
package mux
