package simulation

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// conn is one rank's end of a simulated connection: frames reach the
// other end at the times the network gives, in order, on the loop.
type conn struct {
	net *network
	// rank is this end's; the peer's is other.rank. With the flags below
	// it fills one word: a simulation keeps millions of ends.
	rank       int32
	errPending bool // err arrived before Start
	shut       bool // this end's rank crashed: it neither sends nor receives
	held       bool // its rank asked for it (network.connect)
	closed     bool // its rank closed it: no fault broke it
	other      *conn

	handler transport.Handler
	queue   []transport.Frame // arrived before Start
	// lastArrival keeps the frames this end sends in order, as TCP would:
	// none arrives before the one sent before it.
	lastArrival time.Duration
	openAt      time.Duration // no frame leaves before the dial completes
	err         error         // ended: no more frames either way
}

// me and peer are the ranks of this end and the other.
func (c *conn) me() int   { return int(c.rank) }
func (c *conn) peer() int { return int(c.other.rank) }

var _ transport.Conn = (*conn)(nil)

// Established reports whether the dial completed and the connection is
// open (transport.Establisher).
func (c *conn) Established() bool {
	return c.err == nil && !c.shut && c.net.loop.Elapsed() >= c.openAt
}

// Lossless reports whether the connection is transport.Lossless: a
// simulated one loses nothing short of ending, and ends for good unless
// the run's faults reset connections that their ranks dial again (drops,
// flaps, partitions and corrupt frames, which a checksum catches), after
// which the links resend.
func (c *conn) Lossless() bool { return !c.net.resets }

func (c *conn) LocalAddr() string  { return "sim/" + strconv.Itoa(c.me()) }
func (c *conn) RemoteAddr() string { return "sim/" + strconv.Itoa(c.peer()) }

// Send schedules f's arrival at the other end. A lent payload is copied
// at once (the simulated wire reads it now), unless it is phantom, and
// given back.
func (c *conn) Send(f transport.Frame) error {
	if c.err != nil || c.shut {
		transport.Release(f)
		if c.err != nil {
			return c.err
		}
		return fmt.Errorf("simulation: rank %d is down: %w", c.me(), transport.ErrClosed)
	}
	if f.Sent != nil {
		p := f.Payload
		if !transport.IsPhantom(p) {
			p = transport.GetBuffer(len(f.Payload))
			copy(p, f.Payload)
		}
		f.Sent()
		f.Payload, f.Sent = p, nil
	}
	t := c.net.send(c.me(), c.peer(), len(f.Payload), c.openAt)
	at := max(t.arrival, c.lastArrival)
	c.lastArrival = at
	if c.net.onFrame != nil {
		c.net.onFrame(c.me(), c.peer(), len(f.Payload), c.net.loop.Elapsed(), at)
	}
	c.net.loop.arm(armed{at: at, do: c.net.arrival(c.other, f, t.corrupt)})
	return nil
}

// arrival is a frame on its way to an end, armed on the loop: one of the
// network's, reused, where a closure for each frame would leave the
// collector one for every frame of the run.
type arrival struct {
	to      *conn
	f       transport.Frame
	corrupt bool
}

// arrival returns an arrival of f at to, reusing one that has rung.
func (n *network) arrival(to *conn, f transport.Frame, corrupt bool) *arrival {
	var a *arrival
	if k := len(n.arrivals); k > 0 {
		a, n.arrivals = n.arrivals[k-1], n.arrivals[:k-1]
	} else {
		a = new(arrival)
	}
	*a = arrival{to: to, f: f, corrupt: corrupt}
	return a
}

// Ring hands the frame over, the arrival back to its network first: the
// handler may send, and so arm another.
func (a *arrival) Ring() {
	to, f, corrupt := a.to, a.f, a.corrupt
	*a = arrival{}
	to.net.arrivals = append(to.net.arrivals, a)
	to.arrive(f, corrupt)
}

// arrive hands f to the handler. A corrupt frame fails the connection
// instead, as the real transport's checksum does, naming the sender.
func (c *conn) arrive(f transport.Frame, corrupt bool) {
	if c.err != nil || c.shut || corrupt {
		transport.PutBuffer(f.Payload)
		if corrupt && c.err == nil && !c.shut {
			c.fail(fmt.Errorf("simulation: frame from rank %d: %w", c.peer(), errChecksum))
			c.other.resetAfterInFlight(fmt.Errorf("simulation: rank %d reset the connection: %w", c.me(), errDropped))
		}
		return
	}
	if c.handler == nil {
		c.queue = append(c.queue, f)
		return
	}
	c.handler.HandleFrame(f)
}

// Start delivers what arrived so far, then later frames as they arrive.
func (c *conn) Start(h transport.Handler) {
	if c.handler != nil || h == nil {
		return
	}
	c.handler = h
	for _, f := range c.queue {
		h.HandleFrame(f)
	}
	c.queue = nil
	if c.errPending {
		c.errPending = false
		h.HandleError(c.err)
	}
}

// Close ends both ends: the other one after the frames already sent.
func (c *conn) Close() error {
	if c.err != nil {
		return nil
	}
	c.closed = true
	c.fail(fmt.Errorf("simulation: connection rank %d -> %d closed locally: %w", c.me(), c.peer(), transport.ErrClosed))
	c.other.resetAfterInFlight(fmt.Errorf("simulation: connection rank %d -> %d closed by peer: %w", c.peer(), c.me(), transport.ErrClosed))
	return nil
}

// failDial fails the connection that c dialled, which never came up: both
// ends, since the peer may already hold the other one, had it asked for
// the pair's connection meanwhile.
func (c *conn) failDial(err error) {
	c.fail(fmt.Errorf("dial rank %d: %w", c.peer(), err))
	c.other.fail(fmt.Errorf("rank %d dialled, and failed: %w", c.me(), err))
}

// resetAfterInFlight fails c once the frames its peer already sent have
// arrived.
func (c *conn) resetAfterInFlight(err error) {
	c.net.loop.At(c.other.lastArrival, func() { c.fail(err) })
}

// fail ends c with err and tells its handler, once.
func (c *conn) fail(err error) {
	if c.err != nil {
		return
	}
	err = transport.Closed(err)
	c.err = err
	if c.other.err != nil && c.net.forgets {
		c.net.forget(c)
	}
	switch {
	case c.shut:
		for _, f := range c.queue {
			transport.PutBuffer(f.Payload)
		}
		c.queue = nil
	case c.handler == nil: // Start delivers the queue, then err
		c.errPending = true
	default:
		c.handler.HandleError(err)
	}
}
