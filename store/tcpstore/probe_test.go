package tcpstore_test

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/gocomms/gocomms/store/tcpstore"
)

// startProxy serves each connection to a new listener with handle, until
// the test ends.
func startProxy(t *testing.T, handle func(net.Conn)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Go(func() { handle(nc) })
		}
	})
	return l.Addr().String()
}

// passValidated fronts srv as a PyTorch 2.2 to 2.4 server looks to a
// client: VALIDATE with the PING that server does not know closes the
// connection, as does a first byte other than VALIDATE's, or, when silent
// (the libuv server), leaves it unanswered. A connection that sends
// VALIDATE alone is passed through to srv.
func passValidated(nc net.Conn, srv *tcpstore.Server, silent bool) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	head := make([]byte, 6) // VALIDATE, its magic, the next query
	if _, err := io.ReadFull(br, head[:1]); err != nil {
		return
	}
	if head[0] != 0 || func() bool { _, err := io.ReadFull(br, head[1:]); return err != nil || head[5] == ping }() {
		if silent && head[0] != 0 {
			io.Copy(io.Discard, br)
		}
		return
	}
	up, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := up.Write(head); err != nil {
		return
	}
	go func() {
		io.Copy(nc, up)
		nc.Close()
	}()
	io.Copy(up, br)
}

// TestProbeFindsServersWithoutPing: Dial's probe falls back to VALIDATE
// without PING when the server closes on PING and does not speak 1.x.
func TestProbeFindsServersWithoutPing(t *testing.T) {
	for name, silent := range map[string]bool{"legacy": false, "libuv": true} {
		t.Run(name, func(t *testing.T) {
			srv := startServer(t)
			c := dial(t, startProxy(t, func(nc net.Conn) { passValidated(nc, srv, silent) }))
			if c.Version() != tcpstore.Version2 {
				t.Fatalf("detected %v, want 2.x", c.Version())
			}
			ctx := testContext(t)
			if err := c.Set(ctx, "k", []byte("v")); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Get(ctx, "k"); err != nil || string(v) != "v" {
				t.Errorf("Get = %q, %v", v, err)
			}
		})
	}
}

// TestProbeFindsV1: against a server that closes on VALIDATE, as 1.x
// servers do, Dial speaks 1.x.
func TestProbeFindsV1(t *testing.T) {
	srv := startServer(t)
	addr := startProxy(t, func(nc net.Conn) { passUnvalidated(nc, srv) })
	c := dial(t, addr)
	if c.Version() != tcpstore.Version1 {
		t.Fatalf("detected %v, want 1.x", c.Version())
	}
	if n, err := c.Add(testContext(t), "n", 2); err != nil || n != 2 {
		t.Errorf("Add = %d, %v", n, err)
	}
}

// passUnvalidated closes a connection that starts with VALIDATE and passes
// any other through to srv.
func passUnvalidated(nc net.Conn, srv *tcpstore.Server) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	first, err := br.Peek(1)
	if err != nil || first[0] == 0 {
		return
	}
	up, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		io.Copy(nc, up)
		nc.Close()
	}()
	io.Copy(up, br)
}
