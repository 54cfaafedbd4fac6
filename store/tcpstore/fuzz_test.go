package tcpstore

import (
	"bytes"
	"encoding/binary"
	"net"
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
