package tcp

import (
	"context"
	"hash/crc32"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// waitTimeout bounds every wait; it matters only when a test fails.
const waitTimeout = 20 * time.Second

// appendFrame appends one frame, its payload checksummed, as the writer
// puts it on the wire.
func appendFrame(b []byte, h transport.Header, payload []byte) []byte {
	return appendFrameAs(b, h, payload, true)
}

// appendFrameAs appends one frame, its payload checksummed or not.
func appendFrameAs(b []byte, h transport.Header, payload []byte, checked bool) []byte {
	var hdr [headerLen]byte
	putHeader(hdr[:], h, len(payload), crc32.Checksum(payload, castagnoli), checked)
	return append(append(b, hdr[:]...), payload...)
}

// listen listens on loopback and closes the listener after t.
func listen(t *testing.T, opts ...Option) (*Network, transport.Listener) {
	t.Helper()
	nw := New(append([]Option{WithListenHost("127.0.0.1")}, opts...)...)
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return nw, l
}

// rawPeer dials l with a plain socket, exchanges the preface by hand, and
// returns the socket and the accepted end, started with a recorder.
func rawPeer(t *testing.T, l transport.Listener) (net.Conn, transport.Conn, *recorder) {
	t.Helper()
	raw, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.Write(appendPreface(nil, []byte("raw"))); err != nil {
		t.Fatal(err)
	}
	var ans [answerLen]byte
	if _, err := io.ReadFull(raw, ans[:]); err != nil {
		t.Fatal(err)
	}
	if err := parseAnswer(&ans); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, _, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := newRecorder()
	c.Start(r)
	return raw, c, r
}

// testHeader is a header whose fields all differ from one frame to the
// next.
func testHeader(i int) transport.Header {
	return transport.Header{Comm: 7, Kind: transport.Collective, Seq: uint64(i), Tag: uint32(i) * 31, Sig: uint64(i) * 0x9E3779B97F4A7C15}
}

// recorder is a Handler that keeps what it receives.
type recorder struct {
	mu      sync.Mutex
	frames  []transport.Frame
	errs    []error
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) HandleFrame(f transport.Frame) {
	r.mu.Lock()
	r.frames = append(r.frames, f)
	r.mu.Unlock()
	r.notify()
}

func (r *recorder) HandleError(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	r.notify()
}

func (r *recorder) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// waitError waits for HandleError and returns the frames delivered before
// it and its error; it fails t if HandleError came more than once.
func (r *recorder) waitError(t *testing.T) ([]transport.Frame, error) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		frames, errs := r.frames, r.errs
		r.mu.Unlock()
		if len(errs) > 1 {
			t.Fatalf("HandleError called %d times: %v", len(errs), errs)
		}
		if len(errs) == 1 {
			return frames, errs[0]
		}
		select {
		case <-r.changed:
		case <-timer.C:
			t.Fatalf("no HandleError after %v (%d frames)", waitTimeout, len(frames))
		}
	}
}

// count returns how many frames have arrived.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames)
}

// snapshot returns the frames that have arrived.
func (r *recorder) snapshot() []transport.Frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]transport.Frame(nil), r.frames...)
}

// waitFrames waits until n frames have arrived.
func (r *recorder) waitFrames(t *testing.T, n int) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		got, errs := len(r.frames), r.errs
		r.mu.Unlock()
		if got >= n {
			return
		}
		if len(errs) > 0 {
			t.Fatalf("connection failed after %d of %d frames: %v", got, n, errs[0])
		}
		select {
		case <-r.changed:
		case <-timer.C:
			t.Fatalf("only %d of %d frames after %v", got, n, waitTimeout)
		}
	}
}
