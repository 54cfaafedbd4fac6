package tcp

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
)

func TestSendTooLarge(t *testing.T) {
	nw, l := listen(t, WithMaxPayload(16))
	c, err := nw.Dial(t.Context(), l.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(transport.Frame{Payload: make([]byte, 17)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Send of 17 bytes with a 16-byte limit: %v, want ErrTooLarge", err)
	}
	if err := c.Send(transport.Frame{Payload: make([]byte, 16)}); err != nil {
		t.Errorf("Send at the limit: %v", err)
	}
}

// TestDrained: after Close, Drained is closed once the peer has every frame
// sent before the close.
func TestDrained(t *testing.T) {
	nw, l := listen(t)
	d, err := nw.Dial(t.Context(), l.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := l.Accept(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r := newRecorder()
	a.Start(r)
	for i := range 100 {
		if err := d.Send(transport.Frame{Header: testHeader(i), Payload: payloadOf(i)}); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	select {
	case <-d.(transport.Drainer).Drained():
	case <-time.After(waitTimeout):
		t.Fatal("Drained not closed after Close")
	}
	r.mu.Lock()
	n := len(r.frames)
	r.mu.Unlock()
	if n != 100 {
		t.Errorf("the peer had %d of 100 frames when Drained closed", n)
	}
}

// TestLentPayloadsDropped: lent payloads still queued when the connection
// fails are given back, each exactly once.
func TestLentPayloadsDropped(t *testing.T) {
	_, l := listen(t)
	raw, c, r := rawPeer(t, l) // raw never reads: the writer blocks, the rest queues
	const n = 64
	var calls [n]atomic.Int32
	returned := make(chan struct{}, n)
	buf := make([]byte, 1<<20)
	for i := range n {
		err := c.Send(transport.Frame{Header: testHeader(i), Payload: buf, Sent: func() {
			calls[i].Add(1)
			returned <- struct{}{}
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	raw.(*net.TCPConn).SetLinger(0)
	raw.Close()
	r.waitError(t)
	for range n {
		select {
		case <-returned:
		case <-time.After(waitTimeout):
			t.Fatal("a lent payload was never given back")
		}
	}
	for i := range calls {
		if got := calls[i].Load(); got != 1 {
			t.Errorf("Sent of frame %d called %d times, want once", i, got)
		}
	}
}
