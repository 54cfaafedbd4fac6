// Package transport owns the transport seam: how the engine's link actors
// exchange frames with peers, and how connections between them are set up.
// It defines Network, Listener, Conn and Handler, the Frame that crosses
// them, the payload buffer pool, and Inproc, the in-process twin that tests
// and single-process embeddings use. TCP, shared memory and the simulator's
// network implement the same interfaces, and all of them pass the suite in
// transporttest.
//
// Start reading at Conn and Handler in transport.go. Delivery is pushed:
//
//	c, err := network.Dial(ctx, addr, hello) // or: c, hello, err := l.Accept(ctx)
//	c.Start(handler)                          // frames queued so far go first
//	c.Send(transport.Frame{Header: h, Payload: buf})
//	// handler.HandleFrame(f) ... in order, one call at a time
//	// handler.HandleError(err) once, when the connection ends
//
// Handlers must not block: the link actor's handler posts the frame into
// its mailbox and returns. A handler may Send on its own connection.
//
// Payload ownership moves with the frame. Send owns f.Payload from the call
// on, even when it fails, and the handler owns what it receives. Buffers from
// GetBuffer go back with PutBuffer; the pool is the package's only global
// state.
//
// Backlog (backlog.go) is the socket transports' Listener: an accept loop,
// a handshake goroutine per connection, and a queue of those that passed
// for Accept.
//
// EncodeHeader and DecodeHeader (wire.go) lay out a Header as the socket
// transports' frame headers begin.
//
// Inbox (inbox.go) is the delivery queue connections embed to keep that
// contract: in order, one call at a time, no lock held across a call.
//
// Inproc (inproc.go, inproc_conn.go) starts no goroutines: Send calls the
// peer's handler in the sender's goroutine when that end is started and
// idle, and otherwise queues the frame for whoever is delivering. No lock is
// held across a handler call, which is what lets handlers on both ends
// answer each other without deadlock. Its listeners also take connections
// made elsewhere (Deliver), for networks whose conns are not its own.
//
// This package must not know about collectives, communicators or actors:
// Header fields are carried verbatim, never interpreted. Heartbeats,
// retransmission and timeouts belong to the link actor, on the runtime's
// clock; transports only report failures they see. Transports do not log.
package transport
