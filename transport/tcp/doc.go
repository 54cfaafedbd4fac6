// Package tcp is the transport.Network over TCP sockets that carries frames
// between ranks in different processes and machines. It owns the wire
// format, the connection preface, socket options, and the two goroutines
// that serve each connection; it passes the suite in transporttest.
//
// Start reading at New and Network in network.go, then conn.go. A
// connection is one TCP stream per Dial, served by:
//
//	Send (checksum, header) -> written in place, if nothing else is being
//	                           written or waits, as far as the socket takes
//	                           it without blocking; the rest -> queue ->
//	                           writer goroutine: vectored writes of headers
//	                           and payloads, then each payload back to the
//	                           pool, or to its lender (Frame.Sent)
//	socket -> reader goroutine, or a goroutine that polls (Poll): header,
//	          payload into a pooled buffer, checksum -> inbox -> Handler,
//	          in order
//
// Send checksums the payload in the caller's goroutine, where it was
// usually just written, and never waits for the network or the peer. The
// reader delivers straight to the handler once Start is called; frames
// that arrive earlier wait in the inbox and Start delivers them first.
// Past the receive window (WithReceiveWindow) of waiting frames the reader
// stops reading, and TCP holds the sender back. Handler calls are never
// made under a lock, so a handler may Send or Close.
//
// A goroutine waiting for frames may read them itself (transport.Poller,
// poll.go): the reader goroutine, woken from a blocked read, leaves it the
// socket until it stops, and a little longer. A collective's caller then
// sends and receives its frames with no goroutine's wake-up on either
// side.
//
// # Wire format
//
// All integers are little-endian. A dialer opens with a preface of 20
// bytes followed by its hello:
//
//	offset size field
//	0      8    magic "GOCOMMS\x00"
//	8      2    version, 1
//	10     2    flags, 0 (reserved)
//	12     4    hello length, at most transport.MaxHello
//	16     4    CRC32C of bytes 0..15 followed by the hello
//	20     n    hello
//
// The acceptor answers with 12 bytes before any frame flows:
//
//	0      8    magic "GOCOMMS\x00"
//	8      2    the acceptor's version
//	10     2    status: 0 accepted, 1 unsupported version
//
// A listener hangs up without an answer on a preface that is not a
// gocomms one, so a dialer learns at once that it reached something else.
// Then each side sends frames, each a 44-byte header and the payload:
//
//	0      1    Kind
//	1      1    flags: 1 = the payload carries no CRC32C (bytes 36..39 are 0)
//	2      2    reserved, 0
//	4      4    Tag
//	8      8    Comm
//	16     8    Seq
//	24     8    Sig
//	32     4    payload length n, at most the configured maximum (1 GiB)
//	36     4    CRC32C of the payload, or 0 with flag 1
//	40     4    CRC32C of header bytes 0..39
//	44     n    payload
//
// CRC32C is the Castagnoli polynomial, as hash/crc32 computes it with the
// CPU's instructions. The header has its own checksum so that a corrupted
// length is never believed. The payload's is computed where the sender
// asks for it (WithPayloadChecksums): by default between two hosts, not
// within one, where it cost a third of a large all-reduce's time and the
// kernel's copies have nothing to corrupt; the receiver checks it
// whenever it is there. A frame that fails a check is never
// delivered: it ends the connection with an error naming the peer and the
// frame. So does a frame that announces a payload over the maximum, before
// anything is allocated for it; a large payload's buffer grows as its
// bytes arrive, so a length promised but never sent costs nothing more.
//
// # Ends
//
// Every error a handler sees, and every error of a Send on a closed or
// failed connection, wraps transport.ErrClosed and names the peer's
// address; checks that fail add ErrChecksum, ErrProtocol or ErrTooLarge. Close makes Sends fail at once, lets the
// writer finish what was queued before it and send FIN, and tells the
// local handler; the peer's handler gets every frame sent before the
// close, then its error. The socket is released once the peer has closed
// its end too, or after the close timeout; connections implement
// transport.Drainer, whose channel says when, so that a process can wait
// for its last frames before it exits.
//
// # Addresses
//
// Listen("") binds every interface (or the WithListenHost host, or the
// address WithInterfaces picks) on a port the kernel picks (or the first
// free one of WithPortRange). Listener.Addr is what peers should dial: a
// listener bound to every interface reports the WithAdvertiseHost host, by
// default the address Choose picks with no list: that of an up interface
// neither loopback nor docker, IPv4 first. A Dial to a port where nothing
// listens fails at once with transport.ErrRefused; retrying is the
// caller's business, on its own clock.
//
// This package must not interpret headers, know about collectives or
// communicators, log, or retry; heartbeats and reconnection belong to the
// link actor. One TCP stream per connection is all it does: striping a
// connection over several streams for bandwidth is future work.
package tcp
