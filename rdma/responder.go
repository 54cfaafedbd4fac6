package rdma

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"unsafe"
)

// errPeerClosed reports a stream that the peer ended cleanly, between two
// messages.
var errPeerClosed = errors.New("closed by the peer (or its process ended)")

// bufferSize is the size of each connection's read buffer and of the
// responder's reply buffer: one system call takes in, or sends, many small
// requests or replies, while payloads larger than it move straight between
// the socket and registered memory.
const bufferSize = 64 << 10

// responder applies a peer's requests to registered memory, one at a time
// in the order they arrive, and replies to each in that order. It is the
// software provider's stand-in for the peer's NIC.
//
// Replies gather in bw and are flushed whenever the responder is about to
// wait for bytes that have not arrived: a burst of pipelined requests gets
// its replies in one write, and a lone request gets its reply at once.
type responder struct {
	br     *bufio.Reader
	bw     *bufio.Writer
	w      io.Writer // the connection, for large read payloads
	notify func()    // counts a notifying write that landed

	nextID uint64 // the id the next request must have
	req    [reqHeaderLen]byte
	rep    [repHeaderLen]byte
	iov    [2][]byte
	out    net.Buffers // a field, so as not to allocate per read
}

func newResponder(r io.Reader, w io.Writer, notify func()) *responder {
	return &responder{
		br:     bufio.NewReaderSize(r, bufferSize),
		bw:     bufio.NewWriterSize(w, bufferSize),
		w:      w,
		notify: notify,
		nextID: 1,
	}
}

// serve applies requests until the stream ends or breaks the protocol,
// and returns why it stopped: errPeerClosed for a clean end.
func (r *responder) serve() error {
	for {
		if err := r.await(reqHeaderLen); err != nil {
			return err
		}
		if _, err := io.ReadFull(r.br, r.req[:]); err != nil {
			if err == io.EOF {
				return errPeerClosed
			}
			return fmt.Errorf("receive request %d: %w", r.nextID, err)
		}
		raceAcquire()
		q, err := parseRequest(&r.req, r.nextID)
		if err != nil {
			return err
		}
		r.nextID++
		switch q.op {
		case opWrite:
			err = r.write(q)
		case opRead:
			err = r.read(q)
		default:
			err = r.atomic(q)
		}
		if err != nil {
			return err
		}
	}
}

// await flushes the replies gathered so far unless n bytes are buffered
// already, so that no reply waits while the responder waits for bytes.
func (r *responder) await(n uint64) error {
	if uint64(r.br.Buffered()) >= n {
		return nil
	}
	if err := r.bw.Flush(); err != nil {
		return fmt.Errorf("send replies: %w", err)
	}
	return nil
}

// resolve finds the registration q names and acquires its range, or says
// why not.
func resolve(q request) (*Memory, []byte, status) {
	m := lookup(q.key)
	if m == nil {
		return nil, nil, statusUnregistered
	}
	b, st := m.acquire(q.addr, q.n)
	if st != statusOK {
		return nil, nil, st
	}
	return m, b, statusOK
}

// write receives a write's payload into registered memory, or discards it
// if the memory cannot take it, and replies.
func (r *responder) write(q request) error {
	if err := r.await(q.n); err != nil {
		return err
	}
	m, dst, st := resolve(q)
	if st != statusOK {
		if _, err := io.CopyN(io.Discard, r.br, int64(q.n)); err != nil {
			return fmt.Errorf("receive the payload of request %d (%d bytes): %w", q.id, q.n, unexpected(err))
		}
		r.reply(reply{status: st, id: q.id})
		return nil
	}
	_, err := io.ReadFull(r.br, dst)
	m.release()
	if err != nil {
		return fmt.Errorf("receive the payload of request %d (%d bytes to key %#x): %w", q.id, q.n, q.key, unexpected(err))
	}
	if q.notify {
		r.notify()
	}
	r.reply(reply{id: q.id})
	return nil
}

// read replies with the registered memory q names, written from where it
// lies.
func (r *responder) read(q request) error {
	m, src, st := resolve(q)
	if st != statusOK {
		r.reply(reply{status: st, id: q.id})
		return nil
	}
	defer m.release()
	putReply(&r.rep, reply{id: q.id, value: q.n})
	raceRelease()
	if len(src)+repHeaderLen <= r.bw.Available() {
		r.bw.Write(r.rep[:])
		r.bw.Write(src)
		return nil
	}
	if err := r.bw.Flush(); err != nil {
		return fmt.Errorf("send replies: %w", err)
	}
	r.iov = [2][]byte{r.rep[:], src}
	r.out = r.iov[:]
	_, err := r.out.WriteTo(r.w)
	r.iov = [2][]byte{}
	if err != nil {
		return fmt.Errorf("send the payload of request %d (%d bytes): %w", q.id, q.n, err)
	}
	return nil
}

// atomic applies a fetch-add or compare-and-swap with sync/atomic, so that
// it is atomic with respect to every other atomic on the word in this
// process: through any transport, or by the owner's own sync/atomic.
func (r *responder) atomic(q request) error {
	m, b, st := resolve(q)
	rep := reply{status: st, id: q.id}
	if st == statusOK {
		if q.addr%8 != 0 || uintptr(unsafe.Pointer(&b[0]))%8 != 0 {
			rep.status = statusMisaligned
		} else {
			w := (*uint64)(unsafe.Pointer(&b[0]))
			if q.op == opFetchAdd {
				rep.value = atomic.AddUint64(w, q.a) - q.a
			} else {
				rep.value = compareAndSwap(w, q.a, q.b)
			}
		}
		m.release()
	}
	r.reply(rep)
	return nil
}

// compareAndSwap sets *w to swap if it holds compare, and returns what it
// held.
func compareAndSwap(w *uint64, compare, swap uint64) uint64 {
	for {
		old := atomic.LoadUint64(w)
		if old != compare || atomic.CompareAndSwapUint64(w, old, swap) {
			return old
		}
	}
}

// reply gathers a reply without a payload. A write error sticks in bw,
// and the next flush returns it.
func (r *responder) reply(rep reply) {
	putReply(&r.rep, rep)
	raceRelease()
	r.bw.Write(r.rep[:])
}

// unexpected turns a clean end of stream inside a message into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
