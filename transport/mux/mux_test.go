package mux_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/mux"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// TestInterleavedComms: streams on several comms of one connection, in
// both directions at once, each stay in order, while the receiving end
// opens and starts its comms in a race with the frames arriving.
func TestInterleavedComms(t *testing.T) {
	const each = 2000
	comms := []uint64{1, 0xfeed, 1 << 63, 42, 7}
	a, b := muxPair(t)
	var wg sync.WaitGroup
	recs := map[*mux.Mux][]*transporttest.Recorder{a: make([]*transporttest.Recorder, len(comms)), b: make([]*transporttest.Recorder, len(comms))}
	errs := make(chan error, 2*len(comms))
	for m := range recs {
		for i, comm := range comms {
			r := transporttest.NewRecorder()
			recs[m][i] = r
			wg.Go(func() {
				c, err := m.Open(comm)
				if err != nil {
					errs <- err
					return
				}
				t.Cleanup(func() { c.Close() })
				c.Start(r)
				errs <- sendStream(c, comm, 0, each)
			})
		}
	}
	wg.Wait()
	for range 2 * len(comms) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, rs := range recs {
		for i, r := range rs {
			checkStream(t, r.WaitFrames(t, each), comms[i], each)
			r.Check(t)
		}
	}
}

// TestHeldUntilOpen: frames, and a close, that arrive for a comm before
// it is opened wait for Start, then later frames follow them.
func TestHeldUntilOpen(t *testing.T) {
	a, b := muxPair(t)
	closed := open(t, a, 7)
	if err := sendStream(closed, 7, 0, 100); err != nil {
		t.Fatal(err)
	}
	closed.Close()
	live := open(t, a, 8)
	if err := sendStream(live, 8, 0, 10); err != nil {
		t.Fatal(err)
	}

	r7 := transporttest.NewRecorder()
	open(t, b, 7).Start(r7)
	got, err := r7.WaitError(t)
	checkStream(t, got, 7, 100)
	if !errors.Is(err, transport.ErrClosed) {
		t.Errorf("comm 7 ended with %v, want ErrClosed", err)
	}

	r8 := transporttest.NewRecorder()
	open(t, b, 8).Start(r8)
	if err := sendStream(live, 8, 10, 20); err != nil {
		t.Fatal(err)
	}
	checkStream(t, r8.WaitFrames(t, 20), 8, 20)
	if _, errs := r8.Snapshot(); len(errs) > 0 {
		t.Errorf("comm 8 ended: %v", errs[0])
	}
	r7.Check(t)
	r8.Check(t)
}

// TestCloseLeavesOthers: closing one virtual conn ends that comm at both
// ends, after its frames, and nothing else.
func TestCloseLeavesOthers(t *testing.T) {
	a, b := muxPair(t)
	var ac, bc [2]transport.Conn
	var ar, br [2]*transporttest.Recorder
	for i := range 2 {
		ac[i], bc[i] = open(t, a, uint64(i)), open(t, b, uint64(i))
		ar[i], br[i] = transporttest.NewRecorder(), transporttest.NewRecorder()
		ac[i].Start(ar[i])
		bc[i].Start(br[i])
	}
	if err := sendStream(ac[0], 0, 0, 50); err != nil {
		t.Fatal(err)
	}
	if err := ac[0].Close(); err != nil {
		t.Fatal(err)
	}
	got, err := br[0].WaitError(t)
	checkStream(t, got, 0, 50)
	if !errors.Is(err, transport.ErrClosed) {
		t.Errorf("peer's comm 0 ended with %v, want ErrClosed", err)
	}
	if _, err := ar[0].WaitError(t); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("local comm 0 ended with %v, want ErrClosed", err)
	}
	for i, c := range []transport.Conn{ac[0], bc[0]} {
		if err := c.Send(frame(0, 0)); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Send on closed comm 0 (end %d): %v, want ErrClosed", i, err)
		}
	}
	bc[0].Close()

	// Comm 1 and the connection go on, and new comms open on it.
	if err := sendStream(ac[1], 1, 0, 10); err != nil {
		t.Fatal(err)
	}
	if err := sendStream(bc[1], 1, 0, 10); err != nil {
		t.Fatal(err)
	}
	checkStream(t, br[1].WaitFrames(t, 10), 1, 10)
	checkStream(t, ar[1].WaitFrames(t, 10), 1, 10)
	r := transporttest.NewRecorder()
	open(t, b, 2).Start(r)
	if err := sendStream(open(t, a, 2), 2, 0, 1); err != nil {
		t.Fatal(err)
	}
	checkStream(t, r.WaitFrames(t, 1), 2, 1)
	for _, r := range append(ar[:], append(br[:], r)...) {
		r.Check(t)
	}
}

// tap passes a conn through and keeps the error it reports.
type tap struct {
	transport.Conn
	err chan error
}

func (c *tap) Start(h transport.Handler) { c.Conn.Start(tapHandler{h, c.err}) }

type tapHandler struct {
	transport.Handler
	err chan error
}

func (h tapHandler) HandleError(err error) {
	h.err <- err
	h.Handler.HandleError(err)
}

// TestUnderlyingFailure: when the connection fails, every virtual conn
// reports its error after the frames it has, those opened later included.
func TestUnderlyingFailure(t *testing.T) {
	ca, cb := inprocPair(t)
	under := &tap{Conn: ca, err: make(chan error, 1)}
	a, b := mux.New(under), mux.New(cb)
	t.Cleanup(func() { a.Close() })
	ra := []*transporttest.Recorder{transporttest.NewRecorder(), transporttest.NewRecorder()}
	for i, r := range ra {
		open(t, a, uint64(i)).Start(r)
	}
	if err := sendStream(open(t, b, 0), 0, 0, 10); err != nil {
		t.Fatal(err)
	}
	if err := sendStream(open(t, b, 3), 3, 0, 5); err != nil {
		t.Fatal(err)
	}
	b.Close()
	cause := <-under.err

	for i, r := range ra {
		got, err := r.WaitError(t)
		checkStream(t, got, uint64(i), []int{10, 0}[i])
		if !errors.Is(err, cause) {
			t.Errorf("comm %d ended with %v, want it to wrap %v", i, err, cause)
		}
		r.Check(t)
	}
	late := transporttest.NewRecorder()
	c := open(t, a, 3)
	c.Start(late)
	got, err := late.WaitError(t)
	checkStream(t, got, 3, 5)
	if !errors.Is(err, cause) {
		t.Errorf("comm opened after the failure ended with %v, want it to wrap %v", err, cause)
	}
	if err := c.Send(frame(3, 0)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after the failure: %v, want ErrClosed", err)
	}
	late.Check(t)
}

// TestMuxClose: Close ends every virtual conn locally, and the peer's
// after the frames sent before it.
func TestMuxClose(t *testing.T) {
	a, b := muxPair(t)
	ra, rb := []*transporttest.Recorder{transporttest.NewRecorder(), transporttest.NewRecorder()}, []*transporttest.Recorder{transporttest.NewRecorder(), transporttest.NewRecorder()}
	for i := range 2 {
		c := open(t, a, uint64(i))
		c.Start(ra[i])
		open(t, b, uint64(i)).Start(rb[i])
		if err := sendStream(c, uint64(i), 0, 5*i); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := ra[i].WaitError(t); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("local comm %d ended with %v, want ErrClosed", i, err)
		}
		got, err := rb[i].WaitError(t)
		checkStream(t, got, uint64(i), 5*i)
		if !errors.Is(err, transport.ErrClosed) {
			t.Errorf("peer's comm %d ended with %v, want ErrClosed", i, err)
		}
		ra[i].Check(t)
		rb[i].Check(t)
	}
	select {
	case <-a.Drained():
	default:
		t.Error("Drained not closed after Close of a mux over a conn that is no Drainer")
	}
	if _, err := a.Open(9); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Open after Close: %v, want ErrClosed", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenOnce(t *testing.T) {
	a, _ := muxPair(t)
	c := open(t, a, 5)
	if _, err := a.Open(5); !errors.Is(err, mux.ErrOpened) {
		t.Errorf("second Open: %v, want ErrOpened", err)
	}
	c.Close()
	if _, err := a.Open(5); !errors.Is(err, mux.ErrOpened) {
		t.Errorf("Open after Close: %v, want ErrOpened", err)
	}
	if c.LocalAddr() == "" || c.RemoteAddr() == "" {
		t.Errorf("addresses %q -> %q: want both set", c.LocalAddr(), c.RemoteAddr())
	}
}

// TestSendChecksHeader: a frame for another comm, or posing as a close
// marker, is refused and the conn goes on.
func TestSendChecksHeader(t *testing.T) {
	a, b := muxPair(t)
	c := open(t, a, 5)
	r := transporttest.NewRecorder()
	open(t, b, 5).Start(r)
	bad := []transport.Header{
		{Comm: 6, Kind: transport.Collective},
		{Comm: 5, Kind: mux.KindClose},
	}
	for _, h := range bad {
		if err := c.Send(transport.Frame{Header: h}); !errors.Is(err, mux.ErrHeader) {
			t.Errorf("Send of %+v: %v, want ErrHeader", h, err)
		}
	}
	if err := c.Send(frame(5, 0)); err != nil {
		t.Fatal(err)
	}
	checkStream(t, r.WaitFrames(t, 1), 5, 1)
	if _, errs := r.Snapshot(); len(errs) > 0 {
		t.Errorf("peer ended: %v", errs[0])
	}
}

// establishing is a connection still being made until made is set.
type establishing struct {
	transport.Conn
	made bool
}

func (e *establishing) Established() bool { return e.made }

// TestVirtualConnsReportTheSharedConnectionMade: a virtual conn is made
// when the connection it shares is, and always over one that is made
// when it exists.
func TestVirtualConnsReportTheSharedConnectionMade(t *testing.T) {
	d, a := inprocPair(t)
	lazy := &establishing{Conn: d}
	c := open(t, mux.New(lazy), 7)
	if transport.Established(c) {
		t.Error("a virtual conn over a connection still being made reports it made")
	}
	lazy.made = true
	if !transport.Established(c) {
		t.Error("a virtual conn over a made connection reports it still being made")
	}
	if !transport.Established(open(t, mux.New(a), 7)) {
		t.Error("a virtual conn over an in-process connection reports it still being made")
	}
}
