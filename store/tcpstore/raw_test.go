package tcpstore_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store/tcpstore"
)

// msg builds requests and replies field by field, little-endian as on the
// wire.
type msg []byte

func q(code byte) msg { return msg{code} }

func (m msg) u8(b byte) msg { return append(m, b) }

func (m msg) u32(v uint32) msg { return binary.LittleEndian.AppendUint32(m, v) }

func (m msg) i64(v int64) msg { return binary.LittleEndian.AppendUint64(m, uint64(v)) }

func (m msg) str(s string) msg { return append(m.i64(int64(len(s))), s...) }

func (m msg) keys(keys ...string) msg {
	m = m.i64(int64(len(keys)))
	for _, k := range keys {
		m = m.str(k)
	}
	return m
}

// reply starts a reply, which has no query byte.
func reply() msg { return msg{} }

// fromHex reads the protocol doc's notation: hex bytes, with "00×7" for
// seven zero bytes.
func fromHex(t *testing.T, s string) msg {
	t.Helper()
	var out msg
	for _, f := range strings.Fields(s) {
		n := 1
		if b, count, ok := strings.Cut(f, "×"); ok {
			f = b
			n = int(count[0] - '0')
		}
		b, err := hex.DecodeString(f)
		if err != nil {
			t.Fatalf("bad hex %q: %v", f, err)
		}
		for range n {
			out = append(out, b...)
		}
	}
	return out
}

// 1.13 and 2.2+ query bytes.
const (
	v1Set, v1CompareSet, v1Get, v1Add, v1Check, v1Wait, v1NumKeys, v1WatchKey, v1Delete             = 0, 1, 2, 3, 4, 5, 6, 7, 8
	v2Validate, v2Set, v2CompareSet, v2Get, v2Add, v2Check, v2Wait, v2NumKeys, v2Delete             = 0, 1, 2, 3, 4, 5, 6, 7, 8
	append_, multiGet, multiSet, cancelWait, ping, queuePush, queuePop, queueLen, listKeys, barrier = 9, 10, 11, 12, 13, 14, 15, 16, 17, 18
)

const magic = 0x3C85F7CE

// raw is a bare connection to a server that checks replies byte for byte.
type raw struct {
	t  *testing.T
	nc net.Conn
	v2 bool // has sent VALIDATE
}

func dialRaw(t *testing.T, srv *tcpstore.Server) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc}
}

// dialRaw2 opens a raw connection that has sent the 2.x VALIDATE.
func dialRaw2(t *testing.T, srv *tcpstore.Server) *raw {
	r := dialRaw(t, srv)
	r.send(q(v2Validate).u32(magic))
	r.v2 = true
	return r
}

func (r *raw) send(m msg) {
	r.t.Helper()
	if _, err := r.nc.Write(m); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// expect reads len(want) bytes and compares them.
func (r *raw) expect(want msg) {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(testTimeout))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r.nc, got); err != nil {
		r.t.Fatalf("reading % x: %v (got % x)", []byte(want), err, got)
	}
	if !bytes.Equal(got, want) {
		r.t.Fatalf("reply % x, want % x", got, []byte(want))
	}
}

// roundTrip sends m and expects want.
func (r *raw) roundTrip(m, want msg) {
	r.t.Helper()
	r.send(m)
	r.expect(want)
}

// sync waits until the server has run what r sent before, by a CHECK of
// no keys.
func (r *raw) sync() {
	r.t.Helper()
	check := q(v1Check)
	if r.v2 {
		check = q(v2Check)
	}
	r.roundTrip(check.keys(), reply().u8(0))
}

// expectQuiet checks that nothing arrives for a short while.
func (r *raw) expectQuiet() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	var b [1]byte
	if n, err := r.nc.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		r.t.Fatalf("expected silence, got % x, %v", b[:n], err)
	}
}

// expectClosed checks that the server closes the connection without
// replying.
func (r *raw) expectClosed() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(testTimeout))
	b, err := io.ReadAll(r.nc)
	if len(b) > 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		r.t.Fatalf("expected the connection closed, got % x, %v", b, err)
	}
}
