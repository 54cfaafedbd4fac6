//go:build linux

package nvl

import (
	"time"

	"github.com/gocomms/gocomms/transport"
)

// The receiving side of a connection is the server's, and a poller's
// while it holds rxMu: a goroutine that waits for frames (the engine's,
// running a collective off its actors) takes them out of the ring itself,
// delivering them to the handler on its own goroutine, rather than wait
// for the server to read them and hand them over. While any goroutine
// polls, the server neither spins nor asks the peer for doorbells: the
// poller is awake and reading, so the peer's frames cost it no system
// call, and the process one busy thread. For a while after the last
// poller stopped (pollLinger) the server still sleeps so, with a deadline,
// then asks for doorbells again and takes what came meanwhile, so that
// nothing waits unseen.

var _ transport.Poller = (*conn)(nil)

// Polling counts the caller among the connection's pollers (on), or no
// longer (off): a poller that stops hands the reading back to the server
// at once, asking the peer for doorbells on its behalf if it sleeps, and
// taking what the peer published before it could see the request.
func (c *conn) Polling(on bool) {
	if on {
		c.pollers.Add(1)
		return
	}
	c.lingers.Store(false)
	if c.pollers.Add(-1) > 0 || !c.sleeping.Load() {
		return // a poller goes on, or the server is awake, and sleeps asking
	}
	c.rx.ctl.asleep.Store(1)
	c.Poll()
}

// Paused stops the caller's polling for now: the server leaves the
// reading to pollers for pollLinger more.
func (c *conn) Paused() {
	c.pauses.Add(1)
	c.lingers.Store(true)
	c.pollers.Add(-1)
}

// pollLinger is how long after the last poller stopped the server still
// sleeps without asking for doorbells: a loop of blocking collectives
// polls again within it, and its peer's frames then need no doorbell,
// nor this side's server a wake-up. What arrives meanwhile waits for the
// next poller, or for the server, which looks at the linger's end and
// then sleeps asking, as an idle connection does.
const pollLinger = 200 * time.Microsecond

// lingering reports whether a goroutine polls, or paused and has not
// stopped since: the server then sleeps for pollLinger at a time, and
// lingers on while pollers paused again meanwhile (pauses moved).
func (c *conn) lingering() bool {
	return c.pollers.Load() > 0 || c.lingers.Load()
}

// earliest returns the earlier of two read deadlines, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// Poll delivers to the handler, on the calling goroutine, the frames that
// have arrived, and reports whether it took anything: nothing while the
// server reads, or once the connection is over. What only the server
// does (end the connection after a malformed record, answer a goodbye,
// write records queued for the peer) it wakes the server for.
func (c *conn) Poll() bool {
	if !c.rxMu.TryLock() {
		return false
	}
	if c.served || c.pollErr != nil || c.peerBye {
		c.rxMu.Unlock()
		return false
	}
	moved, err := c.receive()
	if err != nil {
		c.pollErr = err
	}
	bye := c.peerBye
	c.rxMu.Unlock()
	if err != nil || bye || c.waiting.Load() > 0 {
		c.kick()
	}
	return moved
}

// serveReceive is the server's receive: it reports what moved, and
// whether the peer's goodbye is in, unless a poller reads now.
func (c *conn) serveReceive() (moved, bye bool, err error) {
	if !c.rxMu.TryLock() {
		return false, false, nil
	}
	defer c.rxMu.Unlock()
	if c.pollErr != nil {
		return false, c.peerBye, c.pollErr
	}
	moved, err = c.receive()
	return moved, c.peerBye, err
}

// rxReady reports whether rx holds bytes not yet taken; a poller that
// reads now will take them.
func (c *conn) rxReady() bool {
	if !c.rxMu.TryLock() {
		return false
	}
	defer c.rxMu.Unlock()
	return c.rx.ready(c.head) != 0
}

// kick wakes the server from its sleep on the socket, by a read deadline
// in the past, which it sets back once awake.
func (c *conn) kick() {
	c.kicked.Store(true)
	if c.sleeping.Load() {
		c.sock.SetReadDeadline(time.Unix(1, 0))
	}
}
