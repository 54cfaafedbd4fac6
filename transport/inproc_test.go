package transport_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/transporttest"
)

func TestInprocConformance(t *testing.T) {
	transporttest.Run(t, func(*testing.T) transport.Network { return transport.NewInproc() })
}

func TestInprocZeroValue(t *testing.T) {
	var nw transport.Inproc
	transporttest.Run(t, func(*testing.T) transport.Network { return &nw })
}

func TestInprocAddresses(t *testing.T) {
	nw := transport.NewInproc()
	ctx := context.Background()

	l, err := nw.Listen("inproc/1")
	if err != nil {
		t.Fatal(err)
	}
	// A fresh address skips names taken explicitly.
	l2, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	if l2.Addr() == l.Addr() {
		t.Fatalf("fresh address %q collides with an explicit one", l2.Addr())
	}
	if _, err := nw.Listen("inproc/1"); !errors.Is(err, transport.ErrAddrInUse) {
		t.Errorf("Listen on a taken address: %v, want ErrAddrInUse", err)
	}

	// Addresses are private to one Inproc.
	if _, err := transport.NewInproc().Dial(ctx, l.Addr(), nil); !errors.Is(err, transport.ErrRefused) {
		t.Errorf("Dial from another Inproc: %v, want ErrRefused", err)
	}
	if _, err := nw.Dial(ctx, "nowhere", nil); !errors.Is(err, transport.ErrRefused) {
		t.Errorf("Dial to an unknown address: %v, want ErrRefused", err)
	}

	// Closing a listener frees its address.
	l.Close()
	l3, err := nw.Listen("inproc/1")
	if err != nil {
		t.Fatalf("Listen after Close: %v", err)
	}
	l3.Close()
	l2.Close()
}

// TestInprocDeliver: a connection made elsewhere, queued with Deliver, is
// what Accept returns, with its hello; the listener's Close closes one
// nobody accepted; and where nothing listens Deliver refuses.
func TestInprocDeliver(t *testing.T) {
	nw, other := transport.NewInproc(), transport.NewInproc()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	ol, err := other.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer ol.Close()
	ctx := context.Background()
	made := func() (dialer, acceptor transport.Conn) { // a connection of another network
		d, err := other.Dial(ctx, ol.Addr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		a, _, err := ol.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return d, a
	}
	d, a := made()
	hello := []byte("hi")
	if err := nw.Deliver(l.Addr(), a, hello); err != nil {
		t.Fatal(err)
	}
	hello[0] = 'X' // Deliver copied it
	if got, h, err := l.Accept(ctx); err != nil || got != a || string(h) != "hi" {
		t.Fatalf("Accept = %v, %q, %v; want the delivered conn and its hello", got, h, err)
	}
	d.Close()

	d, a = made()
	if err := nw.Deliver(l.Addr(), a, nil); err != nil {
		t.Fatal(err)
	}
	h := &countingHandler{}
	d.Start(h)
	l.Close()
	if len(h.errs) != 1 || !errors.Is(h.errs[0], transport.ErrClosed) {
		t.Errorf("dialer of a conn never accepted got %v after the listener's Close, want ErrClosed", h.errs)
	}
	if err := nw.Deliver(l.Addr(), a, nil); !errors.Is(err, transport.ErrRefused) {
		t.Errorf("Deliver to a closed listener: %v, want ErrRefused", err)
	}
}

// countingHandler delivers synchronously into counters the test reads in
// the same goroutine: Inproc delivers in the sender's goroutine.
type countingHandler struct {
	frames int
	errs   []error
}

func (h *countingHandler) HandleFrame(f transport.Frame) { h.frames++; transport.PutBuffer(f.Payload) }
func (h *countingHandler) HandleError(err error)         { h.errs = append(h.errs, err) }

// TestInprocSynchronous pins what Inproc promises beyond the suite: a Send
// to a started, idle end has been handled when Send returns, and a Send that
// fails returns its payload to the pool.
func TestInprocSynchronous(t *testing.T) {
	nw := transport.NewInproc()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := nw.Dial(context.Background(), l.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := l.Accept(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHandler{}
	a.Start(h)
	for i := range 3 {
		if err := d.Send(transport.Frame{Payload: transport.GetBuffer(100)}); err != nil {
			t.Fatal(err)
		}
		if h.frames != i+1 {
			t.Fatalf("after Send %d the handler has seen %d frames", i+1, h.frames)
		}
	}
	d.Close()
	if len(h.errs) != 1 || !errors.Is(h.errs[0], transport.ErrClosed) {
		t.Fatalf("after the peer's Close the handler has errors %v, want one ErrClosed", h.errs)
	}
	a.Start(&countingHandler{}) // a second Start has no effect
	if err := a.Send(transport.Frame{}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Send to a closed peer: %v", err)
	}
	a.Close()
	if len(h.errs) != 1 {
		t.Fatalf("local Close after the peer's re-notified the handler: %v", h.errs)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[transport.Kind]string{
		transport.Collective:   "collective",
		transport.PointToPoint: "point-to-point",
		transport.Control:      "control",
		transport.Link:         "link",
		0:                      "kind(0)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, want)
		}
	}
}
