package tcpstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// FuzzServerDecode feeds arbitrary bytes to a server connection, in either
// dialect. It must not panic, must finish once the input ends (by running
// out of requests or rejecting one), and must close the connection.
// Memory stays bounded because lengths are checked against the limits
// before anything is allocated, and payloads grow only as bytes arrive.
func FuzzServerDecode(f *testing.F) {
	v1 := func(code byte) []byte { return []byte{code} }
	v2 := func(code byte) []byte { return append([]byte{0, 0xce, 0xf7, 0x85, 0x3c}, code) }
	str := func(b []byte, s string) []byte {
		return append(binary.LittleEndian.AppendUint64(b, uint64(len(s))), s...)
	}
	i64 := func(b []byte, v int64) []byte { return binary.LittleEndian.AppendUint64(b, uint64(v)) }
	for _, seed := range [][]byte{
		str(str(v1(0), "/k"), "v1"),           // SET
		str(v1(2), "/k"),                      // GET of a missing key
		i64(str(v1(3), "init/"), 1),           // ADD
		str(str(i64(v1(5), 2), "/w1"), "/w2"), // WAIT
		v1(6),                                 // GETNUMKEYS
		str(v1(7), "/watched"),                // WATCH_KEY
		i64(v1(11), -1),                       // MULTI_SET, negative count
		binary.LittleEndian.AppendUint32(v2(13), 0x00801234), // PING
		str(str(str(v2(2), "k"), ""), "d"),                   // COMPARE_SET
		append(str(i64(v2(6), 1), "k"), 12),                  // WAIT, CANCEL_WAIT
		i64(str(v2(18), "b"), 2),                             // BARRIER
		str(str(v2(14), "q"), "item"),                        // QUEUE_PUSH
		str(v2(15), "q"),                                     // QUEUE_POP
		v2(17),                                               // LIST_KEYS
		i64(v1(0), 1<<40),                                    // SET with a huge length
		[]byte("GET / HTTP/1.1\r\n\r\n"),
	} {
		f.Add(seed)
	}
	limits := Limits{MaxKeyLen: 64, MaxValueLen: 4 << 10, MaxKeys: 16}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := newServer(newServerConfig([]ServerOption{WithLimits(limits)}))
		defer s.Close()
		nc := &inputConn{in: bytes.NewReader(in)}
		done := make(chan struct{})
		go func() {
			s.serveConn(nc)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection did not finish after its input ended")
		}
		if !nc.isClosed() {
			t.Fatal("the connection was left open")
		}
	})
}

// inputConn is a connection whose peer sends fixed bytes, then ends its
// side; what the server writes is discarded.
type inputConn struct {
	in     *bytes.Reader
	mu     sync.Mutex
	closed bool
}

func (c *inputConn) Read(b []byte) (int, error) {
	if c.isClosed() {
		return 0, net.ErrClosed
	}
	return c.in.Read(b)
}

func (c *inputConn) Write(b []byte) (int, error) {
	if c.isClosed() {
		return 0, net.ErrClosed
	}
	return len(b), nil
}

func (c *inputConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *inputConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *inputConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *inputConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *inputConn) SetDeadline(time.Time) error      { return nil }
func (c *inputConn) SetReadDeadline(time.Time) error  { return nil }
func (c *inputConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzClientDecode feeds arbitrary bytes to a client, as the replies of a
// hostile server, in either dialect. Every call must return, with an error
// or a value, without panicking and without waiting for its deadline,
// since the server has ended its side; and a value must be made of the
// server's bytes.
//
//	go test -run XXX -fuzz FuzzClientDecode ./store/tcpstore
func FuzzClientDecode(f *testing.F) {
	// Each call finds the idle connection stale, the server having ended
	// it, and reads reply from its start on a new one: this reply is one
	// every call accepts.
	var buf bytes.Buffer
	e := encoder{w: bufio.NewWriter(&buf)}
	e.u8(stopWaiting) // also CHECK's ready: both are 0
	e.str("value")
	e.str("")
	e.w.Flush()
	valid := buf.Bytes()
	for _, v2 := range []bool{false, true} {
		f.Add(v2, valid)
		f.Add(v2, valid[:len(valid)-3])
		f.Add(v2, binary.LittleEndian.AppendUint64([]byte{stopWaiting}, 1<<62)) // a huge value
		f.Add(v2, []byte{7})                                                    // no such WAIT reply
		f.Add(v2, []byte{})
	}

	srv := newHostileServer(f)
	f.Fuzz(func(t *testing.T, v2 bool, reply []byte) {
		version := Version1
		if v2 {
			version = Version2
		}
		srv.set(v2, reply)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := Dial(ctx, srv.ln.Addr().String(), WithVersion(version), WithTimeout(5*time.Second))
		if err != nil {
			t.Fatalf("Dial: %v", err) // the handshake is honest
		}
		defer c.Close()
		check := func(op string, err error, values ...[]byte) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s waited for its deadline after the reply had ended: %v", op, err)
			}
			for _, v := range values {
				if err == nil && !bytes.Contains(reply, v) {
					t.Errorf("%s returned %q, which the server did not send", op, v)
				}
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			v, err := c.Get(ctx, "k")
			check("Get", err, v)
			vs, err := c.MultiGet(ctx, "a", "b")
			if err == nil && len(vs) != 2 {
				t.Errorf("MultiGet of 2 keys returned %d values", len(vs))
			}
			check("MultiGet", err, vs...)
			_, err = c.Add(ctx, "n", 1)
			check("Add", err)
			_, err = c.Check(ctx, "k")
			check("Check", err)
			_, err = c.NumKeys(ctx)
			check("NumKeys", err)
			check("Wait", c.Wait(ctx, "k"))
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the client hung past its context")
		}
	})
}

// hostileServer answers every connection with the reply last set, after
// echoing the PING of a 2.x handshake where set, then ends its side and
// reads until the client closes. One serves a whole fuzzing run: a
// listener per input would leave the loopback ports to bind among ever
// more in TIME_WAIT, slowing the run down.
type hostileServer struct {
	ln    net.Listener
	mu    sync.Mutex
	v2    bool
	reply []byte
}

func newHostileServer(f *testing.F) *hostileServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	s := &hostileServer{ln: ln}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			v2, reply := s.v2, s.reply
			s.mu.Unlock()
			wg.Go(func() { answer(nc, v2, reply) })
		}
	})
	f.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

func (s *hostileServer) set(v2 bool, reply []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.v2, s.reply = v2, bytes.Clone(reply) // the fuzzer reuses its input
}

func answer(nc net.Conn, v2 bool, reply []byte) {
	defer nc.Close()
	if v2 {
		var hello [10]byte // VALIDATE and its magic, PING and its nonce
		if _, err := io.ReadFull(nc, hello[:]); err != nil {
			return
		}
		nc.Write(hello[6:])
	}
	nc.Write(reply)
	nc.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, nc)
}
