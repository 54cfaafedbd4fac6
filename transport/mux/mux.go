package mux

import (
	"fmt"
	"sync"

	"github.com/gocomms/gocomms/transport"
)

// KindClose marks the frame a virtual conn sends when it closes: its Comm
// is the closed comm, its other fields are zero and it has no payload. The
// value lies outside the engine's kinds, and Send refuses it.
const KindClose transport.Kind = 255

// Mux carries virtual conns, one per communicator id, over one
// transport.Conn. Create it with New. Its methods are safe for concurrent
// use.
type Mux struct {
	conn    transport.Conn
	cfg     config
	drained chan struct{} // closed by Close when conn is no Drainer
	borrows bool          // conn is a transport.Borrower

	// mu guards the fields below and every virtual conn's state. It is
	// never held across conn's Send, Start or Close, nor a handler call:
	// any of them may come back into the Mux.
	mu     sync.Mutex
	comms  map[uint64]*vconn // every comm opened, or held for Open
	held   int               // bytes held for comms not yet opened
	err    error             // why the mux ended, once it has
	closed bool              // Close was called
}

// New takes ownership of conn and starts it; frames for comms that are not
// open yet are held for Open.
func New(conn transport.Conn, opts ...Option) *Mux {
	m := &Mux{conn: conn, cfg: defaultConfig(), comms: make(map[uint64]*vconn)}
	for _, o := range opts {
		o(&m.cfg)
	}
	if _, ok := conn.(transport.Drainer); !ok {
		m.drained = make(chan struct{})
	}
	_, m.borrows = conn.(transport.Borrower)
	conn.Start(receiver{m})
	return m
}

// Open returns the virtual conn for comm. Frames the peer has sent for comm
// so far, and its close if it came, are delivered first once the conn is
// started. A comm can be opened once in a Mux's life; after Close, Open
// fails with an error wrapping transport.ErrClosed. After the underlying
// conn failed, Open still succeeds, and the conn reports the failure.
func (m *Mux) Open(comm uint64) (transport.Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("transport/mux: open comm %#x on %s: %w", comm, m.describe(), transport.ErrClosed)
	}
	vc := m.comms[comm]
	if vc == nil {
		vc = m.add(comm)
	} else if vc.opened {
		return nil, fmt.Errorf("transport/mux: open comm %#x on %s: %w", comm, m.describe(), ErrOpened)
	}
	vc.opened = true
	m.held -= vc.held
	vc.held = 0
	if m.borrows {
		return borrowingConn{vc}, nil
	}
	return vc, nil
}

// Close closes the underlying conn and every virtual conn, without close
// markers: the peer's mux learns of the end from the underlying conn. It
// drops the frames held for comms not yet opened.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	err := fmt.Errorf("transport/mux: %s closed locally: %w", m.describe(), transport.ErrClosed)
	if m.err == nil {
		m.err = err
	}
	vcs := make([]*vconn, 0, len(m.comms))
	for _, vc := range m.comms {
		vc.shutdown(err)
		vcs = append(vcs, vc)
	}
	m.held = 0
	m.mu.Unlock()

	for _, vc := range vcs {
		m.mu.Lock()
		vc.kick()
	}
	cerr := m.conn.Close()
	if m.drained != nil {
		close(m.drained)
	}
	return cerr
}

// Err reports why the mux ended: its connection failed or it was closed.
// It is nil while the mux is open.
func (m *Mux) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Drained is the underlying conn's Drained if it is a transport.Drainer,
// and otherwise a channel that Close closes. A process about to exit closes
// the Mux and waits on it, so that the last frames of every virtual conn
// leave; see the package documentation.
func (m *Mux) Drained() <-chan struct{} {
	if m.drained != nil {
		return m.drained
	}
	return m.conn.(transport.Drainer).Drained()
}

// add records comm, as yet unopened, ended already if the mux has. Called
// with m.mu held.
func (m *Mux) add(comm uint64) *vconn {
	vc := &vconn{m: m, comm: comm}
	if m.err != nil {
		vc.end(commErr(comm, m.err))
	}
	m.comms[comm] = vc
	return vc
}

// fail ends the mux with err: every virtual conn, and every one opened
// later, reports it after the frames it already has. Only the first end
// counts. Called with m.mu held; releases it.
func (m *Mux) fail(err error) {
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = err
	vcs := make([]*vconn, 0, len(m.comms))
	for _, vc := range m.comms {
		vc.end(commErr(vc.comm, err))
		vcs = append(vcs, vc)
	}
	m.mu.Unlock()
	for _, vc := range vcs {
		m.mu.Lock()
		vc.kick()
	}
}

// describe names the underlying connection in errors.
func (m *Mux) describe() string {
	return fmt.Sprintf("connection %s->%s", m.conn.LocalAddr(), m.conn.RemoteAddr())
}

func commErr(comm uint64, err error) error {
	return fmt.Errorf("transport/mux: comm %#x: %w", comm, err)
}

// receiver is the underlying conn's handler. It routes each frame to its
// comm's queue and delivers it in the transport's goroutine when that comm
// is started and idle; it never blocks.
type receiver struct{ m *Mux }

func (r receiver) HandleFrame(f transport.Frame) {
	m := r.m
	m.mu.Lock()
	vc := m.comms[f.Header.Comm]
	if vc == nil {
		vc = m.add(f.Header.Comm)
	}
	if vc.recvErr != nil {
		// Closed here, or by the peer in a race with this frame's Send.
		m.mu.Unlock()
		transport.Release(f)
		return
	}
	if vc.handler == nil {
		f = transport.Detach(f) // it waits for Open and Start, maybe long
	}
	if !vc.opened {
		cost := len(f.Payload) + heldOverhead
		if m.held+cost > m.cfg.maxHeld {
			err := fmt.Errorf("transport/mux: %s: a frame of %d bytes for comm %#x would take what is held for comms not yet opened over %d bytes: %w: %w",
				m.describe(), len(f.Payload), f.Header.Comm, m.cfg.maxHeld, ErrHeldLimit, transport.ErrClosed)
			m.fail(err)
			transport.Release(f)
			m.conn.Close() // tell the peer; a handler may close its own conn
			return
		}
		m.held += cost
		vc.held += cost
	}
	if f.Header.Kind == KindClose {
		transport.Release(f)
		vc.end(fmt.Errorf("transport/mux: comm %#x on %s closed by peer: %w", vc.comm, m.describe(), transport.ErrClosed))
	} else {
		vc.queue.Push(f)
	}
	vc.kick()
}

func (r receiver) HandleError(err error) {
	r.m.mu.Lock()
	r.m.fail(err)
}
