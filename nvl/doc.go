// Package nvl is the transport.Network between processes of one host:
// frames travel through shared memory instead of the kernel's network
// stack. It passes the suite in transporttest, and the engine uses it for
// every peer on its host (transport/topo picks it, TCP for the others).
//
// Start reading at Network in network.go, then conn in conn.go. A
// connection is a segment of shared memory, two single-producer,
// single-consumer byte rings in it (ring.go, segment.go), and a Unix
// socket:
//
//	Send -> record header + payload copied into the ring, in the caller's
//	        goroutine; what does not fit waits in a queue
//	     -> or, with WithByAddress, only a large payload's address: the
//	        receiver copies it straight out of the sender's memory
//	        (process_vm_readv) and acks, and the payload goes back to its
//	        owner
//	ring -> the server goroutine: headers, payloads into pooled buffers,
//	        inbox -> Handler, in order
//
// # Waiting
//
// The server polls its ring while there is work, and for 50 µs after the
// last (WithSpin), yielding between polls to this process's goroutines
// and to other processes (sched_yield); then it asks for a doorbell
// (a flag in the ring's control block) and sleeps on the socket, taking
// no CPU. A sender that publishes into a ring whose consumer sleeps, or a
// receiver that frees room a starved sender waits for, sends one byte on
// the socket. The flag, set before a last look at the ring, and Go's
// sequentially consistent atomics make a lost wake-up impossible.
//
// # Lifetime
//
// The dialer creates the segment as an anonymous memory file (memfd) and
// passes its descriptor in the handshake (handshake.go), so the segment
// has no name: it cannot leak across jobs, and the kernel frees it when
// the second of the two processes unmaps it or dies. Listeners bind
// abstract Unix sockets, which vanish with their process too. Nothing is
// ever left in /dev/shm or on disk to clean up.
//
// The socket ends when the peer's process does, however it ends: the
// server then delivers every whole frame the peer published and reports
// an error naming its process. A clean close is a bye record after the
// last frame, answered by the peer's bye, after which both ends let go.
//
// # Trust
//
// A peer must run as the same user (checked with SO_PEERCRED), and
// everything it writes into the shared rings is checked as a socket's
// bytes would be: a malformed record or count ends the connection with
// ErrProtocol before anything is allocated for it. Memory files are
// sealed at their size, and a peer's is mapped only once fstat and
// F_GET_SEALS show it is: a peer cannot shrink one under this process and
// make it fault (SIGBUS). Reading a peer's
// memory needs the kernel's ptrace permission between the two processes
// (same user, and Yama's ptrace_scope 0, or a capability); each side
// tries at the handshake, and where it may not, every payload goes
// through the ring.
//
// This package must not interpret headers, know about collectives or
// communicators, log, or retry.
package nvl
