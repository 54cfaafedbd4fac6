package tcp

import (
	"bufio"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gocomms/gocomms/transport"
)

// allocated is the bytes the process has allocated so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestPromisedPayloadCostsWhatArrived: a header promising 1 GiB followed
// by 3 MiB and then nothing costs buffers for what arrived, not the
// promise, and the frame is never delivered.
func TestPromisedPayloadCostsWhatArrived(t *testing.T) {
	pr, pw := io.Pipe()
	fr := frameReader{r: bufio.NewReaderSize(pr, readBufferSize), max: 1 << 30}
	var hdr [headerLen]byte
	putHeader(hdr[:], testHeader(0), 1<<30, 0, true)
	const arrived = 3 << 20
	done := make(chan error, 1)
	before := allocated()
	go func() {
		_, err := fr.next()
		done <- err
	}()
	if _, err := pw.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write(make([]byte, arrived)); err != nil { // returns once read
		t.Fatal(err)
	}
	if got := allocated() - before; got > 4*arrived+2*firstStep {
		t.Errorf("%d MiB allocated for a frame of which %d MiB arrived", got>>20, arrived>>20)
	}
	pw.Close()
	if err := <-done; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a frame cut short ended with %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestOversizedLengthAllocatesNothing: a length over the maximum fails
// before any buffer is taken.
func TestOversizedLengthAllocatesNothing(t *testing.T) {
	var hdr [headerLen]byte
	putHeader(hdr[:], testHeader(0), 1<<30+1, 0, true)
	var r bufioSource
	fr := frameReader{r: bufio.NewReaderSize(&r, readBufferSize), max: 1 << 30}
	r.b = hdr[:]
	before := allocated()
	if _, err := fr.next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an oversized length gave %v, want ErrTooLarge", err)
	}
	// The error message is all it allocates; the bound leaves room for
	// what other goroutines allocate meanwhile.
	if got := allocated() - before; got > 64<<10 {
		t.Errorf("%d bytes allocated refusing an oversized length", got)
	}
}

// bufioSource serves b once.
type bufioSource struct{ b []byte }

func (s *bufioSource) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// TestStalledFrameDroppedOnClose: a raw peer that promises 1 GiB and
// sends a little holds the connection only until it is closed, and what
// it cost stays bounded.
func TestStalledFrameDroppedOnClose(t *testing.T) {
	_, l := listen(t, WithCloseTimeout(200*time.Millisecond))
	before := allocated()
	raw, c, r := rawPeer(t, l)
	var hdr [headerLen]byte
	putHeader(hdr[:], testHeader(0), 1<<30, 0, true)
	const sent = 1 << 20
	if _, err := raw.Write(append(hdr[:], make([]byte, sent)...)); err != nil {
		t.Fatal(err)
	}
	takeIn(t, c.(*conn), sent)
	if got := allocated() - before; got > 32<<20 {
		t.Errorf("%d MiB allocated for a stalled 1 GiB frame", got>>20)
	}
	c.Close()
	frames, err := r.waitError(t)
	if len(frames) != 0 || !errors.Is(err, transport.ErrClosed) {
		t.Errorf("%d frames, then %v; want none, then ErrClosed", len(frames), err)
	}
	select {
	case <-c.(transport.Drainer).Drained():
	case <-time.After(waitTimeout):
		t.Fatal("the socket of a stalled peer was not released after Close")
	}
	raw.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.Copy(io.Discard, raw); err != nil {
		t.Errorf("the stalled peer's socket ended with %v, want a FIN", err)
	}
}

// takeIn reads what has arrived on c in the calling goroutine, as a
// poller does, until c holds n bytes of the payload it is reading.
func takeIn(t *testing.T, c *conn, n int) {
	t.Helper()
	c.Polling(true) // the reader goroutine, once kicked, leaves the reading to us
	defer c.Polling(false)
	deadline := time.Now().Add(waitTimeout)
	for {
		c.Poll()      // or, while the reader goroutine holds rxMu, a kick
		c.rxMu.Lock() // the kicked reader goroutine lets go of it
		got := c.fr.off
		c.rxMu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of the payload arrived in %v, want %d", got, waitTimeout, n)
		}
		awaitReadable(c, deadline)
	}
}

// awaitReadable blocks until c's socket has bytes to read, or until
// deadline.
func awaitReadable(c *conn, deadline time.Time) {
	c.raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		unix.Poll(fds, int(time.Until(deadline).Milliseconds())+1)
	})
}

// TestEarlyFramesBounded: frames flooding a connection whose handler has
// not started wait up to the receive window, then hold the sender back;
// once started, the handler gets every frame, in order.
func TestEarlyFramesBounded(t *testing.T) {
	const window, frames, size = 1 << 20, 2000, 4 << 10
	heldBack := make(chan struct{}, 1)
	heard := func() {
		select {
		case heldBack <- struct{}{}:
		default:
		}
	}
	receiverHeldBack.Store(&heard)
	defer receiverHeldBack.Store(nil)
	nw, l := listen(t, WithReceiveWindow(window))
	accepted := make(chan transport.Conn, 1)
	go func() {
		c, _, err := l.Accept(t.Context())
		if err == nil {
			accepted <- c
		}
	}()
	d, err := nw.Dial(t.Context(), l.Addr(), []byte("flood"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Start(newRecorder())
	c := <-accepted
	defer c.Close()
	for i := range frames {
		p := transport.GetBuffer(size)
		p[0] = byte(i)
		if err := d.Send(transport.Frame{Header: testHeader(i), Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	// The reader stops taking frames in with the first that passes the
	// window.
	select {
	case <-heldBack:
	case <-time.After(waitTimeout):
		t.Fatalf("%d bytes of early frames wait after %v, and the reader still takes more in", c.(*conn).in.Queued(), waitTimeout)
	}
	queued := c.(*conn).in.Queued()
	if limit := window + size + transport.QueuedCost; queued > limit {
		t.Errorf("%d bytes of early frames wait, want up to the window, %d", queued, limit)
	}
	r := newRecorder()
	c.Start(r)
	r.waitFrames(t, frames)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, f := range r.frames {
		if f.Header != testHeader(i) || len(f.Payload) != size || f.Payload[0] != byte(i) {
			t.Fatalf("frame %d arrived as %+v with %d bytes", i, f.Header, len(f.Payload))
		}
	}
}
