package tcp

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// TestDialNotGocomms: a dial to something that is not a gocomms listener
// fails at once, saying so.
func TestDialNotGocomms(t *testing.T) {
	addr := serveRaw(t, func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	})
	_, err := New().Dial(t.Context(), addr, []byte("hello"))
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "not a gocomms listener") {
		t.Errorf("Dial to an HTTP server: %v, want ErrProtocol saying it is not a gocomms listener", err)
	}
}

func TestDialOtherVersion(t *testing.T) {
	addr := serveRaw(t, func(c net.Conn) {
		b := appendAnswer(nil, statusUnsupportedVersion)
		binary.LittleEndian.PutUint16(b[8:], version+1)
		c.Write(b)
	})
	_, err := New().Dial(t.Context(), addr, nil)
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("Dial to a listener of another version: %v, want ErrProtocol naming its version", err)
	}
}

// TestDialSilentListener: a listener that never answers holds Dial only
// as long as its context.
func TestDialSilentListener(t *testing.T) {
	addr := serveRaw(t, func(net.Conn) {})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := New().Dial(ctx, addr, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial to a silent listener: %v, want DeadlineExceeded", err)
	}
	if _, err := New(WithDialTimeout(50*time.Millisecond)).Dial(t.Context(), addr, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial to a silent listener with a dial timeout: %v, want DeadlineExceeded", err)
	}
}

func TestDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := New().Dial(t.Context(), addr, nil); !errors.Is(err, transport.ErrRefused) {
		t.Errorf("Dial to a closed port: %v, want ErrRefused", err)
	}
}

// TestListenerDropsStrangers: bytes that are not a gocomms preface get the
// connection closed without an answer, and the listener goes on serving.
func TestListenerDropsStrangers(t *testing.T) {
	nw, l := listen(t, WithHandshakeTimeout(100*time.Millisecond))
	for _, send := range []string{"GET / HTTP/1.1\r\n\r\n", "", string(appendPreface(nil, nil)[:10])} {
		raw, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		raw.Write([]byte(send))
		raw.SetReadDeadline(time.Now().Add(waitTimeout))
		if n, err := raw.Read(make([]byte, 64)); err == nil {
			t.Errorf("after %q the listener answered %d bytes, want a hang-up", send, n)
		}
		raw.Close()
	}
	c, err := nw.Dial(t.Context(), l.Addr(), []byte("friend"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, hello, err := l.Accept(t.Context())
	if err != nil || string(hello) != "friend" {
		t.Fatalf("Accept after strangers: hello %q, %v", hello, err)
	}
	a.Close()
}

func TestListenerAnswersOtherVersion(t *testing.T) {
	_, l := listen(t)
	raw, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	p := appendPreface(nil, nil)
	binary.LittleEndian.PutUint16(p[8:], version+1)
	raw.Write(p)
	var ans [answerLen]byte
	if _, err := io.ReadFull(raw, ans[:]); err != nil {
		t.Fatal(err)
	}
	if err := parseAnswer(&ans); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("answer to a version 2 preface reads %v, want a refusal naming version 1", err)
	}
}

// serveRaw accepts connections on loopback and hands each to serve, after
// reading what a dialer sends first; it stops after t.
func serveRaw(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			c.Read(make([]byte, prefaceLen))
			serve(c)
		}
	}()
	return ln.Addr().String()
}
