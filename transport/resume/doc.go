// Package resume makes a lossless connection out of a succession of
// connections to one peer that may break, as TCP connections do: a Conn
// numbers the frames it sends, keeps each until the peer acknowledges
// it, and when the connection underneath breaks and its user hands it a
// new one (Resume), sends again what the peer had not received. To its
// users it is transport.Lossless until it fails for good, so frames may be
// sent on it from any goroutine, as an operation run off the actors sends
// them, with no record of their own.
//
//	c := resume.New(comm, conn) // the first connection
//	c.Start(handler)            // frames, in order, each once across connections
//	c.Send(f)                   // from any goroutine; kept until acknowledged
//	// the handler's HandleError wraps ErrBroken: the connection broke
//	c.Resume(conn2)             // a new connection to the same peer's Conn
//	c.Close()
//
// Deciding when to reconnect, how often and after what backoff, stays
// with the user (the link actor): a Conn neither dials nor waits.
//
// # Over a lossless connection
//
// A connection underneath that is transport.Lossless itself (shared
// memory, a process's pipes) loses nothing short of failing for good, so
// a Conn sends on it unnumbered, keeping nothing, lent payloads and all,
// and its end is the Conn's end: there is nothing to resume. A connection
// made on first use knows it is lossless only once made; the frames sent
// before are numbered, and acknowledged at once.
//
// # Wire
//
// Data frames travel with their headers unchanged but for two flags in
// the Kind: unnumbered (0x20) marks a frame sent over a lossless
// connection, which neither end counts, and askAck (0x80) a numbered
// frame whose sender lent its payload and waits for it back, which the
// receiver acknowledges at once. Both are cleared before delivery. A
// Conn's own frames have Kind 253, no payload, the Comm it was made with,
// and in Seq the count of numbered frames this end has received, so
// every one acknowledges them:
//
//	Tag 0 (resume)  opens every connection after the first, and answers
//	                the peer's: the peer sends again every frame after Seq
//	Tag 1 (ack)     the peer may forget the frames up to Seq
//	Tag 2 (ackNow)  asks for an ack at once: a sender out of Window
//
// A receiver acknowledges every 64 frames or 1 MiB, which bounds what a
// sender keeps with no timer at all, and at once where asked. A sender
// keeps at most Window bytes unacknowledged on the wire; later frames
// wait in the Conn.
//
// An acknowledgement or resume that contradicts the counts (more than was
// sent, or fewer than acknowledged before) says the peer lost its state:
// the Conn fails for good.
package resume
