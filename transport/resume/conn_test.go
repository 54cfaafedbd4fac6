package resume_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/resume"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// wrapped is a Network whose connections are resume.Conns over another's.
type wrapped struct{ transport.Network }

type wrappedListener struct{ transport.Listener }

func (n wrapped) Listen(addr string) (transport.Listener, error) {
	l, err := n.Network.Listen(addr)
	if err != nil {
		return nil, err
	}
	return wrappedListener{l}, nil
}

func (n wrapped) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	c, err := n.Network.Dial(ctx, addr, hello)
	if err != nil {
		return nil, err
	}
	return ending(c), nil
}

func (l wrappedListener) Accept(ctx context.Context) (transport.Conn, []byte, error) {
	c, hello, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, nil, err
	}
	return ending(c), hello, nil
}

// endingConn is a resume.Conn whose user does not reconnect: a break
// ends it, as the transport.Conn contract has every failure do.
type endingConn struct{ *resume.Conn }

func ending(c transport.Conn) transport.Conn { return endingConn{resume.New(0, c)} }

func (c endingConn) Start(h transport.Handler) { c.Conn.Start(endingHandler{h, c.Conn}) }

type endingHandler struct {
	transport.Handler
	c *resume.Conn
}

func (h endingHandler) HandleError(err error) {
	if errors.Is(err, resume.ErrBroken) {
		h.c.Close()
	}
	h.Handler.HandleError(err)
}

// TestConformanceOverTCP: over connections that are not lossless, every
// frame is numbered and kept, and the Conn still keeps the contract.
func TestConformanceOverTCP(t *testing.T) {
	transporttest.Run(t, func(*testing.T) transport.Network { return wrapped{tcp.New()} })
}

// TestConformanceOverLossless: over lossless connections, frames go
// unnumbered, lent payloads and all.
func TestConformanceOverLossless(t *testing.T) {
	transporttest.Run(t, func(*testing.T) transport.Network { return wrapped{transport.NewInproc()} })
}

// TestPassesPollingOn: a Conn may be polled as the connection under it
// may, and says whether a poll costs a system call as it does: a TCP
// socket's, not the in-process pipes'.
func TestPassesPollingOn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nw       transport.Network
		pollable bool
		syscall  bool
	}{
		{"tcp", tcp.New(), true, true},
		{"inproc", transport.NewInproc(), false, false},
	} {
		l, err := tc.nw.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		under, err := tc.nw.Dial(t.Context(), l.Addr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		c := resume.New(0, under)
		if got := transport.Pollable(c); got != tc.pollable {
			t.Errorf("%s: Pollable %v, want %v", tc.name, got, tc.pollable)
		}
		if got := transport.PolledBySyscall(c); got != tc.syscall {
			t.Errorf("%s: PolledBySyscall %v, want %v", tc.name, got, tc.syscall)
		}
		c.Close()
		l.Close()
	}
}
