// Package rdma is a point-to-point, one-sided memory transport in the
// shape of verbs and of torchcomms' RdmaTransport: a process registers
// buffers, hands their RemoteBuffer handles to a peer, and the peer writes,
// reads and updates them with atomics while the owner's code does nothing.
// It is independent of communicators; moving model weights between
// trainers and inference servers is what it is for.
//
// Start reading at Transport in transport.go, then memory.go. Both ends
// do the same:
//
//	m, _ := rdma.Register(buf)       // process-wide, any number of peers
//	t, _ := rdma.New()
//	addr, _ := t.Bind()              // publish addr out of band
//	t.Connect(ctx, peerAddr)         // the peer's published addr
//	t.Write(ctx, view, remote, true) // returns once the bytes are there
//	t.WaitForWrite(ctx)              // at the other end: one notifying write landed
//
// # Providers
//
// A provider carries the operations behind an unexported seam (provider.go):
// Transport keeps what every provider shares, the checks, the contexts, the
// broken and closed states and the counting of notifications, and an
// endpoint only moves operations. There are two. The software provider,
// "tcp" (tcp.go, side.go, requester.go, responder.go), works everywhere: each
// transport listens, and the peer's requests arrive on the connection it
// accepts, where a responder goroutine applies them to registered memory
// in order and replies; its own requests go out on the connection it
// dials, written and their replies read by the calling goroutines
// themselves. The "verbs" provider (verbs*.go) carries them on an RDMA
// device through libibverbs (package rdma/verbs), where Supported says it
// can: one reliable-connected queue pair per transport pair, connected
// over a TCP side channel that Bind and Connect open as the tcp provider
// opens its connections, and that afterwards only maps registration keys
// to the device's rkeys; writes, reads and atomics are RDMA work requests
// that the peer's NIC serves, and a poller goroutine completes them.
// docs/RDMA.md says where its semantics differ from the tcp provider's.
//
// # Semantics
//
// Operations from one transport to its peer are applied in the order their
// requests go out, which for calls from one goroutine is the order of the
// calls: a Read sees every earlier Write, a notifying Write is counted
// after everything before it has landed. The two directions of a pair are
// not ordered with each other. Write returns once the payload is in the
// peer's memory; WaitForWrite at the peer returns after it, and reading
// the memory then is race-free. Atomics are applied with sync/atomic on the
// peer's aligned word, so they are atomic with respect to each other
// through any transport and to the owner's own sync/atomic calls on it,
// and not with respect to Writes covering the word. (With verbs, Write
// returns once the peer's NIC has the payload, and atomics are the NIC's:
// see docs/RDMA.md.)
//
// Remote access to memory the owner is writing or reading at the same time
// is the program's race, as with any memory shared between threads;
// Deregister waits for remote accesses in progress. Bounds, lengths and
// alignment are checked before anything is sent.
//
// # Failure
//
// A call fails with an *OpError naming the operation and the peer. Errors
// that concern one operation (ErrBounds, ErrUnregistered, a context that
// ended before the request was sent, a WaitForWrite that timed out) leave
// the transport usable. A connection that fails, a peer that closes, bytes
// that break the protocol, and a context that ends while its request is on
// the wire break it: the outcome of that request is unknown, as it is on a
// queue pair in the error state, and a read's payload could still land.
// The first cause is kept in an error wrapping ErrBroken that every later
// call returns at once; the call whose context ended returns its context's
// error as well. Close makes pending calls fail with ErrClosed, and
// returns once no goroutine of the transport touches registered memory.
//
// # Wire format (tcp provider; the verbs side channel is in docs/RDMA.md)
//
// All integers are little-endian. A connecting transport sends a 32-byte
// hello; the listener answers with 16 bytes:
//
//	hello:  0 magic "GCRDMA\0\0" | 8 version u16 (1) | 10 zero [6] |
//	        16 nonce of the Address dialed u64 | 24 nonce of the dialer's own Address u64, or 0
//	answer: 0 magic | 8 version u16 | 10 status u8: 0 accepted, 1 stale address,
//	        2 another peer connected, 3 version unsupported, 4 not the peer it connected to |
//	        11 zero [5]
//
// Then the dialer sends requests, each a 56-byte header and, for a write,
// its payload; the listener's end answers each, in order, with a 24-byte
// header and, for a successful read, the payload:
//
//	request: 0 op u8: 1 write, 2 read, 3 fetch-add, 4 compare-and-swap |
//	         1 flags u8: 1 notify (writes only) | 2 zero [6] | 8 id u64: 1, 2, 3, ... |
//	         16 remote address u64 | 24 length u64 (atomics: 8) | 32 key u64 |
//	         40 addend or compare u64 | 48 swap u64 | 56 payload
//	reply:   0 status u8: 0 ok, 1 key not registered, 2 out of bounds, 3 misaligned |
//	         1 zero [7] | 8 id u64 | 16 value u64: old value (atomics), length (read) |
//	         24 payload
//
// Every field is checked: an unknown op, a stray flag or operand, an id out
// of sequence or a length over 1 TiB ends the connection before anything
// is allocated or touched. A request that names an unregistered key or a
// range outside its registration gets status 1 or 2 (a write's payload is
// discarded), and fails that operation only.
//
// This package must not import transport, actors or the root package: it
// sits beside them, and collectives may be built over it, not under it.
package rdma
