package transporttest

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

const streamLen = 10_000

func testFIFO(t *testing.T, nw transport.Network) {
	d, a := connect(t, nw)
	r := NewRecorder()
	a.Start(r)
	if err := sendStream(d, 1, streamLen); err != nil {
		t.Fatalf("Send: %v", err)
	}
	checkStream(t, r.WaitFrames(t, streamLen), 1, streamLen)
	r.Check(t)
}

func testBothDirections(t *testing.T, nw transport.Network) {
	d, a := connect(t, nw)
	rd, ra := NewRecorder(), NewRecorder()
	d.Start(rd)
	a.Start(ra)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = sendStream(d, 1, streamLen) })
	wg.Go(func() { errs[1] = sendStream(a, 2, streamLen) })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	checkStream(t, ra.WaitFrames(t, streamLen), 1, streamLen)
	checkStream(t, rd.WaitFrames(t, streamLen), 2, streamLen)
	rd.Check(t)
	ra.Check(t)
}

func testPayloads(t *testing.T, nw transport.Network) {
	sizes := []int{0, 0, 1, 63, 64, 65, 4095, 4096, 1<<20 + 3, 8 << 20}
	d, a := connect(t, nw)
	rd, ra := NewRecorder(), NewRecorder()
	d.Start(rd)
	a.Start(ra)
	send := func(c transport.Conn, dir uint64) {
		for i, n := range sizes {
			f := transport.Frame{Header: header(dir, i), Payload: pattern(n, dir<<32|uint64(i))}
			switch i { // both a nil and an empty payload must pass
			case 0:
				f.Payload = nil
			case 1:
				f.Payload = []byte{}
			}
			if err := c.Send(f); err != nil {
				t.Fatalf("Send of %d bytes: %v", n, err)
			}
		}
	}
	send(d, 1)
	send(a, 2)
	for dir, r := range map[uint64]*Recorder{1: ra, 2: rd} {
		for i, f := range r.WaitFrames(t, len(sizes)) {
			if f.Header != header(dir, i) {
				t.Errorf("direction %d: frame %d has header %+v, want %+v", dir, i, f.Header, header(dir, i))
			}
			want := pattern(sizes[i], dir<<32|uint64(i))
			if !bytes.Equal(f.Payload, want) {
				t.Errorf("direction %d: payload of %d bytes arrived as %d bytes or with other contents", dir, sizes[i], len(f.Payload))
			}
			transport.PutBuffer(want)
		}
		r.Check(t)
	}
}

// testConcurrentSenders: Sends from one goroutine stay in order even while
// other goroutines send on the same connection.
func testConcurrentSenders(t *testing.T, nw transport.Network) {
	const senders, each = 8, 1000
	d, a := connect(t, nw)
	r := NewRecorder()
	a.Start(r)
	var wg sync.WaitGroup
	errs := make([]error, senders)
	for s := range senders {
		wg.Go(func() { errs[s] = sendStream(d, uint64(s), each) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	byStream := make([][]transport.Frame, senders)
	for _, f := range r.WaitFrames(t, senders*each) {
		if f.Header.Comm >= senders {
			t.Fatalf("frame from unknown stream %d", f.Header.Comm)
		}
		byStream[f.Header.Comm] = append(byStream[f.Header.Comm], f)
	}
	for s, got := range byStream {
		checkStream(t, got, uint64(s), each)
	}
	r.Check(t)
}

func testManyConns(t *testing.T, nw transport.Network) {
	const conns, each = 32, 300
	l := listen(t, nw)
	ctx := testContext(t)

	// Accept in one goroutine, dial from many; hellos pair the ends up.
	accepted := make([]transport.Conn, conns)
	acceptErr := make(chan error, 1)
	go func() {
		for range conns {
			c, hello, err := l.Accept(ctx)
			if err != nil {
				acceptErr <- err
				return
			}
			accepted[binary.LittleEndian.Uint64(hello)] = c
		}
		acceptErr <- nil
	}()
	dialed := make([]transport.Conn, conns)
	dialErrs := make([]error, conns)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { dialed[i], dialErrs[i] = nw.Dial(ctx, l.Addr(), seqPayload(uint64(i))) })
	}
	wg.Wait()
	for i, c := range dialed {
		if c != nil {
			t.Cleanup(func() { c.Close() })
		} else {
			t.Errorf("Dial %d: %v", i, dialErrs[i])
		}
	}
	if t.Failed() {
		l.Close()
		<-acceptErr
		t.FailNow()
	}
	if err := <-acceptErr; err != nil {
		t.Fatalf("Accept: %v", err)
	}
	for _, c := range accepted {
		t.Cleanup(func() { c.Close() })
	}

	// Every connection streams both ways at once.
	rd, ra := make([]*Recorder, conns), make([]*Recorder, conns)
	sendErrs := make([]error, 2*conns)
	for i := range conns {
		rd[i], ra[i] = NewRecorder(), NewRecorder()
		dialed[i].Start(rd[i])
		accepted[i].Start(ra[i])
		wg.Go(func() { sendErrs[2*i] = sendStream(dialed[i], uint64(2*i), each) })
		wg.Go(func() { sendErrs[2*i+1] = sendStream(accepted[i], uint64(2*i+1), each) })
	}
	wg.Wait()
	for i, err := range sendErrs {
		if err != nil {
			t.Fatalf("stream %d: Send: %v", i, err)
		}
	}
	for i := range conns {
		checkStream(t, ra[i].WaitFrames(t, each), uint64(2*i), each)
		checkStream(t, rd[i].WaitFrames(t, each), uint64(2*i+1), each)
		ra[i].Check(t)
		rd[i].Check(t)
	}
}

// testPingPong: each handler answers from inside HandleFrame by sending on
// its own connection, as a link actor's handler may. A transport that holds
// a lock across the handler call deadlocks here.
func testPingPong(t *testing.T, nw transport.Network) {
	const rounds = 10_000
	d, a := connect(t, nw)
	rd, ra := NewRecorder(), NewRecorder()
	replier := func(c transport.Conn) func(transport.Frame) error {
		return func(f transport.Frame) error {
			if f.Header.Seq >= rounds {
				return nil
			}
			return c.Send(transport.Frame{Header: header(0, int(f.Header.Seq)+1), Payload: seqPayload(f.Header.Seq + 1)})
		}
	}
	rd.Reply, ra.Reply = replier(d), replier(a)
	d.Start(rd)
	a.Start(ra)
	// Kick off from another goroutine: if the transport deadlocks inside
	// this Send, the waits below time out and say so.
	errc := make(chan error, 1)
	go func() { errc <- d.Send(transport.Frame{Header: header(0, 0), Payload: seqPayload(0)}) }()
	// The acceptor gets the even numbers 0..rounds, the dialer the odd ones.
	checkPings(t, "acceptor", ra.WaitFrames(t, rounds/2+1), 0)
	checkPings(t, "dialer", rd.WaitFrames(t, rounds/2), 1)
	if err := <-errc; err != nil {
		t.Fatalf("Send: %v", err)
	}
	rd.Check(t)
	ra.Check(t)
}

func checkPings(t *testing.T, who string, got []transport.Frame, first uint64) {
	t.Helper()
	for i, f := range got {
		seq := first + 2*uint64(i)
		if f.Header != header(0, int(seq)) || len(f.Payload) != 8 || binary.LittleEndian.Uint64(f.Payload) != seq {
			t.Fatalf("%s: frame %d is seq %d (payload %x), want seq %d", who, i, f.Header.Seq, f.Payload, seq)
		}
	}
}

// testStartAfterSend: frames that arrive before Start wait for it.
func testStartAfterSend(t *testing.T, nw transport.Network) {
	const n = 1000
	d, a := connect(t, nw)
	if err := sendStream(d, 1, n); err != nil {
		t.Fatalf("Send: %v", err)
	}
	r := NewRecorder()
	a.Start(r)
	checkStream(t, r.WaitFrames(t, n), 1, n)

	// Later frames follow the queued ones.
	if err := d.Send(frame(2, 0)); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := r.WaitFrames(t, n+1)
	checkStream(t, got[n:], 2, 1)
	r.Check(t)
}

// testStartDuringSend: Start racing with a stream keeps the stream in order.
func testStartDuringSend(t *testing.T, nw transport.Network) {
	d, a := connect(t, nw)
	// Start once some frames are queued, while the rest are still being
	// sent, so that queued and fresh frames compete.
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		for i := range streamLen {
			if i == streamLen/10 {
				close(started)
			}
			if err := d.Send(frame(1, i)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	<-started
	r := NewRecorder()
	a.Start(r)
	if err := <-errc; err != nil {
		t.Fatalf("Send: %v", err)
	}
	checkStream(t, r.WaitFrames(t, streamLen), 1, streamLen)
	r.Check(t)
}

// testLentPayloads: a payload sent with Sent set is lent, not given. Sent
// is called exactly once, after which the sender may reuse the memory; the
// peer still receives what was there when it was sent, and a Send that
// fails after Close gives the payload back through Sent too.
func testLentPayloads(t *testing.T, nw transport.Network) {
	sizes := []int{0, 1, 4096, 1 << 20}
	d, a := connect(t, nw)
	r := NewRecorder()
	a.Start(r)
	d.Start(NewRecorder())
	calls := make([]atomic.Int32, len(sizes)+1)
	returned := make(chan int, len(sizes)+1)
	lend := func(i int, payload []byte) transport.Frame {
		return transport.Frame{Header: header(3, i), Payload: payload, Sent: func() {
			calls[i].Add(1)
			returned <- i
		}}
	}
	bufs := make([][]byte, len(sizes))
	for i, n := range sizes {
		bufs[i] = make([]byte, n)
		copy(bufs[i], pattern(n, uint64(i)))
		if err := d.Send(lend(i, bufs[i])); err != nil {
			t.Fatalf("Send of %d lent bytes: %v", n, err)
		}
	}
	for range sizes {
		i := <-returned
		clear(bufs[i]) // the lender's to reuse now
	}
	for i, f := range r.WaitFrames(t, len(sizes)) {
		if !bytes.Equal(f.Payload, pattern(sizes[i], uint64(i))) {
			t.Errorf("lent payload %d of %d bytes arrived changed", i, sizes[i])
		}
	}
	d.Close()
	_ = d.Send(lend(len(sizes), make([]byte, 16)))
	<-returned
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("Sent of frame %d called %d times, want once", i, n)
		}
	}
}
