//go:build race

package rdma

import "sync/atomic"

// wireClock stands, for the race detector, for the order that a socket
// gives the bytes written into it: whatever a goroutine did before it
// wrote a request or a reply happened before what the goroutine that reads
// it does next. The detector sees that edge through write(2) and read(2),
// but not through writev(2), which carries every request with a payload
// and every large read reply. Without it, a program that fills memory and
// then has a peer in this process read it would be reported, wrongly, as
// racing with the responder.
var wireClock atomic.Uint64

// raceRelease is called before writing a request or a reply.
func raceRelease() { wireClock.Add(1) }

// raceAcquire is called after reading a request or a reply header.
func raceAcquire() { wireClock.Load() }
