// Package verbs is a thin, safe layer over the libibverbs calls that a
// one-sided RDMA transport needs: devices, protection domains, registered
// memory, completion queues, and reliable-connected queue pairs that
// write, read, and perform atomics on a peer's memory.
//
// libibverbs is loaded at run time (dlopen), as go-nvml loads NVML, so the
// package builds on every machine, with or without cgo, and links no
// RDMA library (only libdl). Where RDMA cannot be used, calls fail with an
// error that matches ErrUnavailable and says why: built without cgo or
// off Linux, ErrNoLibrary (libibverbs.so.1 will not load), ErrNoDevice (it
// loads but lists no device). A caller that can do without RDMA checks
// for ErrUnavailable and goes on over TCP.
//
// Start reading at Open in verbs.go; sys_cgo.go is the only file that
// calls C, through the functions in ibv.h. The objects and their order
// (errors left out):
//
//	lib := verbs.Open()                  libibverbs, loaded once
//	ctx := lib.OpenDevice("")            a device; owns everything below
//	pd  := ctx.AllocPD()
//	mr  := pd.RegMR(buf, access)         buf pinned until mr.Close
//	cq  := ctx.CreateCQ(depth)
//	qp  := ctx.CreateQP(pd, cq, cq, caps)
//	ep  := qp.Endpoint(port, gidIndex, psn)  -> peer, out of band (MarshalBinary)
//	qp.Connect(ep, peerEp)               INIT -> RTR -> RTS
//	qp.PostWrite / PostWriteImm / PostRead / PostFetchAdd / PostCompareSwap
//	qp.PostSend / PostRecv
//	cq.Poll(completions)                 Completion.Err() for failures
//	ctx.Close()                          closes whatever is left
//
// # Memory
//
// C keeps no Go memory beyond a call, except a registered region's: the
// device holds its address from RegMR until the region's Close, so RegMR
// pins the slice with runtime.Pinner for that time, and the caller must
// keep it. Work requests are built on the C stack inside the call that
// posts them; the provider copies them into its queue before returning.
//
// # Concurrency
//
// Every method is safe for concurrent use, and every method of a closed
// object returns an error matching ErrClosed rather than reaching the
// library. A queue pair's posts are ordered by its own mutex, and a
// completion queue's polls by its; neither takes the context's lock, so
// queue pairs on one device post in parallel. Create and Close take the
// context's lock.
//
// This package must not choose a transport protocol, exchange endpoints
// (the caller carries them, over a store or a socket), start goroutines,
// log, or retry.
package verbs
