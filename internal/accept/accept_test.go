package accept

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestConns checks the limit, Remove and that Close hangs up on what is
// open, once.
func TestConns(t *testing.T) {
	s := NewConns(1)
	a, peerA := net.Pipe()
	b, peerB := net.Pipe()
	defer peerB.Close()
	if err := s.Add(a); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if err := s.Add(b); !errors.Is(err, ErrFull) {
		t.Fatalf("Add over the limit: %v, want ErrFull", err)
	}
	if s.Remove(a) {
		t.Fatal("Remove reports the set closed before Close")
	}
	if err := s.Add(b); err != nil {
		t.Fatalf("Add after Remove: %v", err)
	}
	if !s.Close() || s.Close() {
		t.Fatal("Close reports true only the first time")
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done is open after Close")
	}
	if _, err := peerB.Write([]byte{1}); err == nil {
		t.Fatal("a connection in the set is still open after Close")
	}
	if err := s.Add(a); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Add after Close: %v, want net.ErrClosed", err)
	}
	if !s.Remove(b) {
		t.Fatal("Remove reports the set open after Close")
	}
	peerA.Close()
}

// TestLoop checks that Loop hands over each connection and returns once
// its listener is closed or handle refuses.
func TestLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan net.Conn)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		Loop(ln, nil, nil, func(c net.Conn) bool { got <- c; return true })
	}()
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		(<-got).Close()
	}
	ln.Close()
	waitFor(t, ended)

	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ended = make(chan struct{})
	go func() {
		defer close(ended)
		Loop(ln, nil, nil, func(c net.Conn) bool { c.Close(); return false })
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, ended)
}

func waitFor(t *testing.T, ended <-chan struct{}) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("Loop did not return")
	}
}
