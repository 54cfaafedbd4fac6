// Package tcpstore speaks PyTorch's c10d TCPStore wire protocol, so that
// gocomms ranks can use the store torchrun's agent or a PyTorch rank 0
// hosts, and PyTorch processes can use one a gocomms process hosts. It owns
// Server, which serves any number of 1.x and 2.x clients on one port, and
// Client, a store.Store that speaks either dialect to any such server.
// docs/store-protocol.md summarises the protocol and says what is
// implemented, how dialects are told apart, the limits and the deviations.
//
//	srv, _ := tcpstore.Listen(ctx, ":29500")   // rank 0
//	s, _ := tcpstore.Dial(ctx, "host0:29500")  // every rank; retries until srv is up
//	s.Set(ctx, "rank/3", addr)
//
// The protocol has no framing and no request ids: a request is a query
// byte and self-delimiting fields, answered by zero or one reply, in order.
// Start reading at protocol.go (the two numberings of queries) and wire.go
// (fields and limits), then serverconn.go and handle.go (one connection: detecting its dialect,
// decoding and answering its requests) and state.go (what the queries do).
// The client side is client.go (the connection pool and the shape of a
// call), client_ops.go (the Store methods), connect.go (dialing, retries
// and the dialect probe) and emulate.go (APPEND on 1.x servers).
//
// Glossary, with PyTorch's names: WAIT registers a connection on missing
// keys and gets STOP_WAITING (one byte) when the last is written;
// CANCEL_WAIT drops a connection's registrations and answers WAIT_CANCELED;
// VALIDATE is the 2.x client's first message, PING its liveness probe.
//
// The server keeps its keys in a store.Memory, so counters, CompareSet and
// key counting mean what they mean there. What must not happen: a panic or
// an unbounded allocation on anything a peer sends (wire.go checks every
// length against the limits first; bad input closes that one connection),
// I/O under the state's lock, or a log line the caller did not ask for
// (the server logs only through WithLogger, the client never).
package tcpstore
