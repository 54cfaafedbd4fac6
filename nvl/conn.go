//go:build linux

package nvl

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocomms/gocomms/internal/osyield"
	"github.com/gocomms/gocomms/transport"
)

// conn is one end of a connection: a ring to send on, a ring to receive
// from, and the socket that carried the handshake and now carries only
// doorbells (one-byte messages that wake a sleeping side) and, by ending,
// the news that the peer's process is gone.
//
// Send copies a payload into a free slot of the peer's, or else into the
// ring, in the caller's goroutine and returns; what does not fit waits in
// the queue. One goroutine per connection, the server (serve), receives:
// it polls the ring, spinning a while after the last thing it moved and
// then sleeping on the socket, hands payloads in slots to the handler in
// place, and writes what waits in the queue as the peer frees room.
type conn struct {
	sock          *net.UnixConn
	raw           syscall.RawConn // sock's descriptor, for doorbells that never block
	local, remote string
	peerPID       int
	cfg           *config
	seg           *segment
	tx, rx        ring
	txSlab        *slab // where this side fills slots
	rxSlab        *slab // where the peer does
	// slotFreed[i] gives rx slot i back; one func per slot, made once, so
	// that lending a slot allocates nothing.
	slotFreed []func()
	// lentSlots counts rx slots lent to the handler: the segment stays
	// mapped until the last comes back, even after the connection ends.
	lentSlots atomic.Int32
	over      atomic.Bool // the server has ended
	unmapOnce sync.Once

	// sendByAddress says the peer can read this process's memory, so
	// large payloads stay where they are and only their address travels.
	sendByAddress bool
	// peerReads says the peer may read this process's memory, and so map
	// its shared memory files.
	peerReads bool

	in transport.Inbox

	mu       sync.Mutex
	queue    []outgoing        // records not yet wholly in tx; queue[qHead:] wait
	qHead    int               // the oldest record still waiting
	tail     uint64            // bytes written to tx (published with each write)
	lent     []transport.Frame // by-address payloads the peer has not acked, oldest first
	finished []transport.Frame // written or acked, to release once mu is let go
	sendErr  error             // once set, Send fails with it
	byeState int               // byeNone, byeQueued, byeWritten
	gone     bool              // the segment is unmapped
	waiting  atomic.Int32      // len(queue) - qHead, for the server's check without mu

	// The receiving side's state: the server's, or a poller's while it
	// holds rxMu (poll.go).
	rxMu    sync.Mutex
	pollErr error           // how a poller's receive ended the connection, for the server
	served  bool            // the server has ended: nothing is read any more
	head    uint64          // bytes consumed from rx
	hdr     [recordLen]byte // the record header being read
	hdrHave int             // bytes of hdr read
	cur     transport.Frame // the inline frame whose payload is being read
	curHave int             // bytes of cur.Payload read
	filling bool            // cur is being read
	peerBye bool            // the peer's bye has arrived
	cross   crossReader     // for payloads by address

	// pollers counts the goroutines polling rx (Polling): while there
	// are some, the server sleeps without asking the peer for doorbells.
	pollers  atomic.Int32
	lingers  atomic.Bool   // a poller paused, and none stopped since
	pauses   atomic.Uint64 // pauses so far, which keep the server lingering
	sleeping atomic.Bool   // the server is about to sleep, or sleeps
	kicked   atomic.Bool   // a poller left the server work: wake it
	// readDeadline is the socket's read deadline, which a kick sets
	// back once it has woken the server: zero, or the close timeout's.
	readDeadline atomic.Pointer[time.Time]

	closeOnce sync.Once
	released  chan struct{} // closed once the server has ended and let go of the segment
}

const (
	byeNone = iota
	byeQueued
	byeWritten
)

// outgoing is a record on its way into tx: the record, its header as
// written (encoded when writing starts, so that the record may change
// until then), an inline payload, and the frame to release once both are
// written.
type outgoing struct {
	rec     record
	hdr     [recordLen]byte
	payload []byte
	done    int // bytes of hdr and payload written
	frame   transport.Frame
	release bool // frame is to be released once written
}

var (
	_ transport.Conn     = (*conn)(nil)
	_ transport.Drainer  = (*conn)(nil)
	_ transport.Borrower = (*conn)(nil)
)

// newConn starts serving a connection whose handshake is complete, on
// the dialer's side or the acceptor's.
func newConn(sock *net.UnixConn, seg *segment, dialer bool, local, remote string, peerPID int, sendByAddress bool, cfg *config) *conn {
	c := &conn{
		sock:          sock,
		local:         local,
		remote:        remote,
		peerPID:       peerPID,
		cfg:           cfg,
		seg:           seg,
		tx:            seg.ring0,
		rx:            seg.ring1,
		txSlab:        &seg.slab0,
		rxSlab:        &seg.slab1,
		sendByAddress: sendByAddress && cfg.byAddressMin > 0,
		peerReads:     sendByAddress,
		released:      make(chan struct{}),
	}
	if !dialer {
		c.tx, c.rx, c.txSlab, c.rxSlab = c.rx, c.tx, c.rxSlab, c.txSlab
	}
	c.slotFreed = make([]func(), len(c.rxSlab.states))
	for i := range c.slotFreed {
		c.slotFreed[i] = func() { c.freeSlot(i) }
	}
	c.raw, _ = sock.SyscallConn() // cannot fail on a connected socket
	c.tail = c.tx.ctl.tail.Load()
	c.head = c.rx.ctl.head.Load()
	c.readDeadline.Store(&time.Time{})
	go c.run()
	return c
}

// BorrowsPayloads marks the connection as a transport.Borrower: a lent
// payload is copied into the ring, or read by the peer, from where it lies.
func (c *conn) BorrowsPayloads() {}

// PeerMaps reports whether the peer may map this process's Shared
// memory: it could read this process's memory at the handshake
// (transport.Mapping).
func (c *conn) PeerMaps() bool { return c.peerReads }

// Lossless makes the connection a transport.Lossless one: its rings lose
// nothing, and it ends only with its peer's process or a close.
func (c *conn) Lossless() bool { return true }

func (c *conn) LocalAddr() string  { return c.local }
func (c *conn) RemoteAddr() string { return c.remote }

func (c *conn) Start(h transport.Handler) { c.in.Start(h) }

// Drained is closed once the server has ended: every frame sent before
// Close is in the ring and the peer has said goodbye, or the connection
// failed, or the close timeout gave up waiting.
func (c *conn) Drained() <-chan struct{} { return c.released }

func (c *conn) Send(f transport.Frame) error {
	if len(f.Payload) > MaxPayload {
		transport.Release(f)
		return fmt.Errorf("nvl: send to peer %s: payload of %d bytes exceeds the limit of %d: %w",
			c.remote, len(f.Payload), MaxPayload, ErrTooLarge)
	}
	c.mu.Lock()
	if c.sendErr != nil {
		err := c.sendErr
		c.mu.Unlock()
		transport.Release(f)
		return err
	}
	o := outgoing{
		rec:     record{header: f.Header, what: inline, n: uint32(len(f.Payload))},
		payload: f.Payload, frame: f, release: true,
	}
	if !c.moveToSlot(&o) && c.sendByAddress && len(f.Payload) >= c.cfg.byAddressMin {
		// The peer reads the payload where it lies and acks; the frame
		// waits in lent until then.
		o.rec.what, o.rec.address = byAddress, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(f.Payload))))
		o.payload, o.frame, o.release = nil, transport.Frame{}, false
		c.lent = append(c.lent, f)
	}
	c.queue = append(c.queue, o)
	c.flushLocked()
	c.unlockAndRelease()
	return nil
}

// moveToSlot turns the inline record o, not yet started, into one whose
// payload is in a slot, if one is free and the payload goes in one, and
// reports whether it did: the frame is then released, its payload copied.
// Called with c.mu held.
func (c *conn) moveToSlot(o *outgoing) bool {
	slot := c.fillSlot(o.payload)
	if slot < 0 {
		return false
	}
	o.rec.what, o.rec.address = inSlot, uint64(slot)
	c.finished = append(c.finished, o.frame)
	o.payload, o.frame, o.release = nil, transport.Frame{}, false
	return true
}

// fillSlot copies p into a free slot of the peer's, if p is of a size
// that goes in one and a slot is free, and returns its index, or -1.
func (c *conn) fillSlot(p []byte) int {
	s := c.txSlab
	if s.size == 0 || len(p) < c.cfg.slotFrom || len(p) > s.size {
		return -1
	}
	i := s.acquire()
	if i >= 0 {
		copy(s.slot(i, len(p)), p)
	}
	return i
}

// freeSlot gives rx slot i back to the peer, once its handler is done
// with the payload lent from it.
func (c *conn) freeSlot(i int) {
	c.rxSlab.states[i].Store(0)
	if c.lentSlots.Add(-1) == 0 && c.over.Load() {
		c.unmapOnce.Do(c.seg.unmap)
	}
}

// Close makes Sends fail and tells the local handler; the peer's handler
// gets every frame sent before, then its error, when it reads this side's
// bye, which is queued once no handler call is in progress here (so that
// the peer learns of the close after the call that closed returns).
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		err := c.ended("closed locally", nil)
		c.mu.Lock()
		c.failLocked(err)
		c.mu.Unlock()
		c.in.CloseLocal(err, func() {
			c.mu.Lock()
			c.queueByeLocked()
			c.unlockAndRelease()
		})
		deadline := time.Now().Add(c.cfg.closeTimeout)
		c.readDeadline.Store(&deadline)
		c.sock.SetReadDeadline(deadline)
	})
	return nil
}

// failLocked records the connection's end for Sends, if none is yet.
func (c *conn) failLocked(err error) error {
	if c.sendErr == nil {
		c.sendErr = err
	}
	return c.sendErr
}

// queueByeLocked queues this side's last record, once.
func (c *conn) queueByeLocked() {
	if c.byeState != byeNone || c.gone {
		return
	}
	c.byeState = byeQueued
	c.queue = append(c.queue, outgoing{rec: record{what: bye}})
	c.flushLocked()
}

// queueAckLocked tells the peer that one more by-address payload has been
// read, adding to an ack still waiting whole in the queue if there is one.
func (c *conn) queueAckLocked() {
	if n := len(c.queue); n > c.qHead {
		if last := &c.queue[n-1]; last.done == 0 && last.rec.what == ack {
			last.rec.header.Tag++
			return
		}
	}
	c.queue = append(c.queue, outgoing{rec: record{what: ack, header: transport.Header{Tag: 1}}})
	c.flushLocked()
}

// flushLocked writes queued records into tx as far as there is room,
// publishing each piece, and rings the peer's doorbell if it sleeps.
// When room runs out it asks the peer to ring once it frees some. Called
// with c.mu held.
func (c *conn) flushLocked() {
	if c.gone {
		return
	}
	wrote := false
	for c.qHead < len(c.queue) {
		room := c.tx.room(c.tail)
		if room == 0 {
			c.tx.ctl.starved.Store(1)
			if c.tx.room(c.tail) == 0 {
				break
			}
			continue // the peer freed room meanwhile
		}
		o := &c.queue[c.qHead]
		if o.done == 0 {
			if o.rec.what == inline {
				c.moveToSlot(o) // a slot freed since it was queued
			}
			o.rec.encode(&o.hdr)
		}
		n := min(room, c.cfg.piece)
		if o.done < recordLen {
			k := min(n, recordLen-o.done)
			c.tx.put(c.tail, o.hdr[o.done:o.done+k])
			c.tail += uint64(k)
			o.done += k
			n -= k
		}
		if at := o.done - recordLen; at >= 0 && n > 0 && at < len(o.payload) {
			k := min(n, len(o.payload)-at)
			c.tx.put(c.tail, o.payload[at:at+k])
			c.tail += uint64(k)
			o.done += k
		}
		c.tx.ctl.tail.Store(c.tail)
		wrote = true
		if o.done < recordLen+len(o.payload) {
			continue
		}
		if o.release {
			c.finished = append(c.finished, o.frame)
		}
		if o.rec.what == bye {
			c.byeState = byeWritten
		}
		c.queue[c.qHead] = outgoing{}
		c.qHead++
	}
	if c.qHead > len(c.queue)/2 {
		// Move what waits to the front, so that a queue that never quite
		// empties (the peer always behind) does not grow without end.
		n := copy(c.queue, c.queue[c.qHead:])
		clear(c.queue[n:])
		c.queue, c.qHead = c.queue[:n], 0
	}
	c.waiting.Store(int32(len(c.queue) - c.qHead))
	if wrote && c.tx.ctl.asleep.Load() == 1 && c.tx.ctl.asleep.CompareAndSwap(1, 0) {
		c.ring()
	}
}

// unlockAndRelease lets go of c.mu, then releases the frames written or
// acked meanwhile: their Sent callbacks run without the lock held.
func (c *conn) unlockAndRelease() {
	done := c.finished
	c.finished = nil
	c.mu.Unlock()
	if len(done) == 0 {
		return
	}
	for i, f := range done {
		transport.Release(f)
		done[i] = transport.Frame{}
	}
	c.mu.Lock()
	if c.finished == nil {
		c.finished = done[:0] // keep the capacity
	}
	c.mu.Unlock()
}

// run is the server goroutine: it serves the connection until it ends,
// then lets go of everything.
func (c *conn) run() {
	err := c.serve()
	c.rxMu.Lock() // no poller reads any more
	c.served = true
	c.rxMu.Unlock()
	c.mu.Lock()
	if err != nil {
		err = c.failLocked(err)
	} else {
		err = c.sendErr
	}
	c.gone = true
	for i := c.qHead; i < len(c.queue); i++ {
		if c.queue[i].release {
			c.finished = append(c.finished, c.queue[i].frame)
		}
	}
	c.finished = append(c.finished, c.lent...)
	c.queue, c.qHead, c.lent = nil, 0, nil
	c.waiting.Store(0)
	c.unlockAndRelease()
	if c.filling {
		transport.PutBuffer(c.cur.Payload)
	}
	c.in.Fail(err)
	c.over.Store(true)
	if c.lentSlots.Load() == 0 {
		c.unmapOnce.Do(c.seg.unmap) // else the last slot given back does
	}
	c.sock.Close()
	close(c.released)
}

// serve moves bytes both ways until both byes are through, spinning for
// cfg.spin after the last thing it moved and then sleeping until a
// doorbell rings. It returns nil after a clean goodbye.
func (c *conn) serve() error {
	var idleSince time.Time
	for {
		moved, bye, err := c.serveReceive()
		if err != nil {
			return err
		}
		if c.waiting.Load() > 0 {
			c.mu.Lock()
			before := c.tail
			c.flushLocked()
			moved = moved || c.tail != before
			c.unlockAndRelease()
		}
		if bye && c.byeWritten() {
			return nil
		}
		if moved {
			idleSince = time.Time{}
			continue
		}
		now := time.Now()
		if idleSince.IsZero() {
			idleSince = now
		}
		if now.Sub(idleSince) < c.cfg.spin && !c.lingering() {
			relax()
			continue
		}
		if err := c.sleep(); err != nil {
			return err
		}
		idleSince = time.Time{}
	}
}

// relax lets others run between two polls: this process's goroutines,
// and, through the kernel, other processes' threads, among them the peer
// this side waits for when the two share few cores.
func relax() {
	runtime.Gosched()
	osyield.Yield()
}

// byeWritten reports whether this side's bye is in the ring.
func (c *conn) byeWritten() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byeState == byeWritten
}

// sleep blocks until a doorbell rings, after asking for one: the peer
// rings when it publishes into rx while this side is asleep, and when it
// frees room in tx while this side is starved. Asking and then looking
// once more is what makes a wake-up impossible to miss.
func (c *conn) sleep() error {
	c.sleeping.Store(true)
	defer c.sleeping.Store(false)
	// While a goroutine polls, or did a moment ago and will again, the
	// server sleeps for a while without asking for doorbells (poll.go).
	lingering := c.lingering()
	if !lingering {
		c.rx.ctl.asleep.Store(1)
	}
	if c.rxReady() || c.kicked.Swap(false) || c.waiting.Load() > 0 && c.tx.room(c.tx.ctl.tail.Load()) > 0 {
		c.rx.ctl.asleep.Store(0)
		return nil
	}
	base := *c.readDeadline.Load()
	pauses := c.pauses.Load()
	if lingering {
		c.sock.SetReadDeadline(earliest(base, time.Now().Add(pollLinger)))
	}
	if !lingering {
		if asked := doorbellsAsked.Load(); asked != nil {
			(*asked)(c)
		}
	}
	err := c.await()
	c.rx.ctl.asleep.Store(0)
	if errors.Is(err, os.ErrDeadlineExceeded) && (base.IsZero() || time.Now().Before(base)) {
		err = nil // a kick, or the linger's end
		c.kicked.Store(false)
		c.sock.SetReadDeadline(base)
		if c.pollers.Load() == 0 && c.pauses.Load() == pauses {
			c.lingers.Store(false) // nobody polled for a whole linger
		}
	}
	if err == nil {
		return nil
	}
	// The socket ended. What the peer published before it did is still
	// delivered; then the connection ends.
	bye := false
	for {
		moved, b, rerr := c.serveReceive()
		if rerr != nil {
			return rerr
		}
		bye = b
		if !moved {
			break
		}
	}
	switch {
	case bye && c.byeWritten():
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return c.ended("the peer did not say goodbye in time", nil)
	case errors.Is(err, io.EOF), errors.Is(err, unix.ECONNRESET):
		return c.ended(fmt.Sprintf("peer process %d is gone", c.peerPID), nil)
	}
	return c.ended("doorbell", err)
}

// doorbellsAsked, when set (by tests), hears of each server that asked
// its peer for doorbells and is about to sleep: the state a test of the
// linger's end waits for.
var doorbellsAsked atomic.Pointer[func(*conn)]

// bell is the doorbell: any one-byte message.
var bell = []byte{1}

// ring rings the peer's doorbell. It never blocks: a socket too full to
// take one more holds doorbells the peer has yet to read, so the peer
// wakes anyway. A failure shows as the socket's end in the server.
func (c *conn) ring() {
	c.raw.Write(func(fd uintptr) bool {
		unix.Write(int(fd), bell)
		return true
	})
}

// await blocks until at least one doorbell has rung, and takes every one
// that has, so that rings left over from wake-ups that were not needed
// cannot pile up. It returns io.EOF when the peer has hung up.
func (c *conn) await() error {
	var err error
	if rerr := c.raw.Read(func(fd uintptr) bool {
		var b [64]byte
		rang := false
		for {
			n, e := unix.Read(int(fd), b[:])
			switch {
			case e == unix.EINTR:
			case e == unix.EAGAIN:
				return rang // if none rang yet, wait for the socket
			case e != nil:
				err = e
				return true
			case n == 0:
				err = io.EOF
				return true
			default:
				rang = true
			}
		}
	}); rerr != nil {
		return rerr
	}
	return err
}

// receive takes in what rx holds: record headers, inline payloads piece
// by piece, by-address payloads read from the peer's memory. It reports
// whether it moved anything.
func (c *conn) receive() (bool, error) {
	if c.peerBye {
		return false, nil
	}
	ready := c.rx.ready(c.head)
	if ready < 0 {
		return false, c.ended("receive", fmt.Errorf("%w: the peer's ring count is past its size", ErrProtocol))
	}
	if ready == 0 {
		return false, nil
	}
	for ready > 0 && !c.peerBye {
		if c.filling {
			k := min(ready, len(c.cur.Payload)-c.curHave)
			c.rx.get(c.head, c.cur.Payload[c.curHave:c.curHave+k])
			c.consumed(k)
			ready -= k
			c.curHave += k
			if c.curHave == len(c.cur.Payload) {
				f := c.cur
				c.cur, c.filling = transport.Frame{}, false
				c.in.Push(f)
			}
			continue
		}
		k := min(ready, recordLen-c.hdrHave)
		c.rx.get(c.head, c.hdr[c.hdrHave:c.hdrHave+k])
		c.consumed(k)
		ready -= k
		if c.hdrHave += k; c.hdrHave < recordLen {
			break
		}
		c.hdrHave = 0
		if err := c.take(); err != nil {
			return true, err
		}
	}
	return true, nil
}

// consumed frees k bytes of rx for the peer, and rings its doorbell if it
// is starved for room.
func (c *conn) consumed(k int) {
	c.head += uint64(k)
	c.rx.ctl.head.Store(c.head)
	if c.rx.ctl.starved.Load() == 1 && c.rx.ctl.starved.CompareAndSwap(1, 0) {
		c.ring()
	}
}

// take acts on the record header just read.
func (c *conn) take() error {
	r, err := decodeRecord(&c.hdr, MaxPayload)
	if err != nil {
		return c.ended("receive", err)
	}
	switch r.what {
	case inline:
		if r.n == 0 {
			c.in.Push(transport.Frame{Header: r.header})
			return nil
		}
		c.cur, c.curHave, c.filling = transport.Frame{Header: r.header, Payload: transport.GetBuffer(int(r.n))}, 0, true
	case inSlot:
		i, n := int(r.address), int(r.n)
		if i >= len(c.rxSlab.states) || n > c.rxSlab.size || c.rxSlab.states[i].Load() != 1 {
			return c.ended("receive", fmt.Errorf("%w: %d bytes in slot %d, which is not a full slot of the %d", ErrProtocol, n, i, len(c.rxSlab.states)))
		}
		c.lentSlots.Add(1)
		c.in.Push(transport.Frame{Header: r.header, Payload: c.rxSlab.slot(i, n), Sent: c.slotFreed[i]})
	case byAddress:
		p := transport.GetBuffer(int(r.n))
		if err := c.readPeer(p, r.address); err != nil {
			transport.PutBuffer(p)
			return err
		}
		c.mu.Lock()
		c.queueAckLocked()
		c.unlockAndRelease()
		c.in.Push(transport.Frame{Header: r.header, Payload: p})
	case ack:
		c.mu.Lock()
		n := int(r.header.Tag)
		if n > len(c.lent) {
			c.mu.Unlock()
			return c.ended("receive", fmt.Errorf("%w: ack of %d payloads, %d lent", ErrProtocol, n, len(c.lent)))
		}
		c.finished = append(c.finished, c.lent[:n]...)
		clear(c.lent[:n])
		c.lent = c.lent[n:]
		c.unlockAndRelease()
	case bye:
		c.peerBye = true
		c.mu.Lock()
		err := c.failLocked(c.ended("closed by the peer", nil))
		c.queueByeLocked()
		c.unlockAndRelease()
		c.in.Fail(err)
	}
	return nil
}

// readPeer copies len(p) bytes at address in the peer's memory into p.
func (c *conn) readPeer(p []byte, address uint64) error {
	if err := c.cross.read(c.peerPID, p, address); err != nil {
		return c.ended(fmt.Sprintf("read %d bytes from peer process %d", len(p), c.peerPID), err)
	}
	return nil
}

// ended describes the end of the connection, naming the peer; every such
// error wraps transport.ErrClosed.
func (c *conn) ended(what string, cause error) error {
	if cause == nil {
		return fmt.Errorf("nvl: connection with peer %s (local %s): %s: %w", c.remote, c.local, what, transport.ErrClosed)
	}
	return fmt.Errorf("nvl: connection with peer %s (local %s): %s: %w: %w", c.remote, c.local, what, cause, transport.ErrClosed)
}
