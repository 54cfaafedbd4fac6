package tcpstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store/tcpstore"
)

// heapPeak samples HeapInuse while f runs and returns its largest rise
// over the level before f.
func heapPeak(f func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	f()
	close(stop)
	sampler.Wait()
	runtime.ReadMemStats(&ms)
	return max(peak, ms.HeapInuse) - base
}

// honest checks that an ordinary client is served, promptly.
func honest(t *testing.T, srv *tcpstore.Server, key string) {
	t.Helper()
	start := time.Now()
	c := dial(t, srv.Addr().String())
	ctx := testContext(t)
	if err := c.Set(ctx, key, []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, key); err != nil || string(v) != "v" {
		t.Fatalf("Get(%q) = %q, %v", key, v, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("an honest client took %v", d)
	}
}

// TestAttackMultiGetAmplification: a MULTI_GET of 40 KB naming a 1 MiB
// value 1024 times would cost 1 GiB to answer; it is refused before the
// reply is built.
func TestAttackMultiGetAmplification(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr().String())
	ctx := testContext(t)
	if err := c.Set(ctx, "big", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "big"); err != nil { // SET has no reply
		t.Fatal(err)
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "big"
	}
	grew := heapPeak(func() {
		r := dialRaw2(t, srv)
		r.send(q(multiGet).keys(keys...))
		r.expectClosed()
	})
	t.Logf("heap grew by %d KiB", grew>>10)
	if grew > 64<<20 {
		t.Errorf("refusing the amplified MULTI_GET grew the heap by %d MiB", grew>>20)
	}
	honest(t, srv, "after")
}

// TestRepliesByReference: a reply naming one value many times, allowed by
// a large MaxResponse, does not copy it each time.
func TestRepliesByReference(t *testing.T) {
	srv := startServer(t, tcpstore.WithLimits(tcpstore.Limits{MaxResponse: 1 << 30}))
	c := dial(t, srv.Addr().String())
	ctx := testContext(t)
	if err := c.Set(ctx, "big", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 256)
	for i := range keys {
		keys[i] = "big"
	}
	grew := heapPeak(func() {
		r := dialRaw2(t, srv)
		r.send(q(multiGet).keys(keys...))
		r.nc.SetReadDeadline(time.Now().Add(testTimeout))
		n, err := io.CopyN(io.Discard, r.nc, 256*(8+1<<20))
		if err != nil {
			t.Errorf("read %d bytes of the reply: %v", n, err)
		}
	})
	t.Logf("a 256 MiB reply grew the heap by %d KiB", grew>>10)
	if grew > 64<<20 {
		t.Errorf("a 256 MiB reply of one 1 MiB value grew the heap by %d MiB", grew>>20)
	}
}

// TestAttackPipelinedWaits: a connection that pipelines WAITs on missing
// keys is dropped at MaxWaits, and what it registered is freed.
func TestAttackPipelinedWaits(t *testing.T) {
	srv := startServer(t)
	var m msg
	for i := range 10000 {
		m = append(m, q(v2Wait).keys("missing/"+strconv.Itoa(i))...)
	}
	grew := heapPeak(func() {
		r := dialRaw2(t, srv)
		r.nc.Write(m) // the server may close before taking it all
		r.expectClosed()
	})
	t.Logf("heap grew by %d KiB", grew>>10)
	if grew > 16<<20 {
		t.Errorf("10,000 pipelined WAITs grew the heap by %d MiB", grew>>20)
	}
	honest(t, srv, "missing/1")
}

// TestManyClients: many clients at once each SET and GET their own key.
// GOCOMMS_STORE_CLIENTS sets how many: 10,000 by default, fewer where the
// descriptors run short, 200 with -short.
func TestManyClients(t *testing.T) {
	// Each client costs two descriptors, its end and the server's; Go
	// raised the soft limit to the hard one at start.
	n := 10000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < uint64(2*n+256) {
		n = int(lim.Cur-256) / 2
		t.Logf("RLIMIT_NOFILE is %d: %d clients", lim.Cur, n)
	}
	if v := os.Getenv("GOCOMMS_STORE_CLIENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("GOCOMMS_STORE_CLIENTS=%q: %v", v, err)
		}
	}
	if testing.Short() {
		n = 200
	}
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	var grew uint64
	grew = heapPeak(func() {
		for i := range n {
			wg.Go(func() {
				if err := oneClient(ctx, srv.Addr().String(), i); err != nil {
					if failed.Add(1) <= 5 {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	})
	t.Logf("%d clients in %v; heap grew by %d MiB; %d failed", n, time.Since(start).Round(time.Millisecond), grew>>20, failed.Load())
	// Clients and server share this heap: about 20 KiB each was measured.
	if limit := uint64(n) << 18; grew > limit {
		t.Errorf("heap grew by %d MiB, over %d MiB", grew>>20, limit>>20)
	}
}

func oneClient(ctx context.Context, addr string, i int) error {
	c, err := tcpstore.Dial(ctx, addr, tcpstore.WithVersion(tcpstore.Version2), tcpstore.WithTimeout(time.Minute))
	if err != nil {
		return err
	}
	defer c.Close()
	key, want := fmt.Sprintf("client/%d", i), strconv.Itoa(i)
	if err := c.Set(ctx, key, []byte(want)); err != nil {
		return err
	}
	v, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	if string(v) != want {
		return fmt.Errorf("client %d read %q", i, v)
	}
	return nil
}

// TestAttackHalfOpen: connections that send half a request and stall do
// not hold up others, and are dropped after ReadTimeout.
func TestAttackHalfOpen(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	srv := startServer(t, tcpstore.WithLimits(tcpstore.Limits{ReadTimeout: readTimeout}))
	var d time.Duration
	grew := heapPeak(func() {
		stalled := make([]*raw, 100)
		for i := range stalled {
			stalled[i] = dialRaw2(t, srv)
			stalled[i].send(q(v2Set).str("half").i64(100).u8('x')) // 99 bytes short
		}
		start := time.Now()
		honest(t, srv, "k")
		for _, r := range stalled {
			r.expectClosed()
		}
		d = time.Since(start)
	})
	if d < readTimeout/2 || d > readTimeout+5*time.Second {
		t.Errorf("half-sent requests were dropped after %v, want about %v", d, readTimeout)
	}
	t.Logf("100 half-sent requests: heap grew by %d KiB", grew>>10)
	if grew > 32<<20 {
		t.Errorf("heap grew by %d MiB", grew>>20)
	}
}

// TestIdleTimeout: a connection that sends nothing is dropped after
// IdleTimeout, unless it waits for a key.
func TestIdleTimeout(t *testing.T) {
	srv := startServer(t, tcpstore.WithLimits(tcpstore.Limits{IdleTimeout: 100 * time.Millisecond}))
	waiting := dialRaw2(t, srv)
	waiting.send(q(v2Wait).keys("later"))
	// Once the CHECK is answered, the waiting connection's IdleTimeout
	// runs. The server's own timer tells when it has run out: an idle
	// connection dialled after is dropped once it has, and a second,
	// dialled once the first is gone, an IdleTimeout later, by which
	// time the waiting one would have been dropped too, had it counted
	// as idle.
	waiting.sync()
	for range 2 {
		dialRaw2(t, srv).expectClosed()
	}
	setter := dialRaw2(t, srv)
	setter.send(q(v2Set).str("later").str("v"))
	waiting.expect(reply().u8(0))
}

// TestAttackOversizedLengths: lengths over the limits are refused at
// once; lengths within them, with nothing behind, cost little each.
func TestAttackOversizedLengths(t *testing.T) {
	srv := startServer(t, tcpstore.WithLimits(tcpstore.Limits{ReadTimeout: time.Second}))
	for _, m := range []msg{
		q(v2Set).i64(1 << 62),
		q(v2Set).str("k").i64(-1),
		q(v2Wait).i64(1 << 40),
		q(multiSet).i64(1 << 40),
	} {
		r := dialRaw2(t, srv)
		r.send(m)
		r.expectClosed()
	}
	const conns = 100
	grew := heapPeak(func() {
		var rs []*raw
		for range conns {
			r := dialRaw2(t, srv)
			r.send(q(v2Set).str("k").i64(64 << 20)) // the default MaxValueLen
			rs = append(rs, r)
		}
		honest(t, srv, "k2")
		for _, r := range rs {
			r.expectClosed()
		}
	})
	t.Logf("%d connections announcing 64 MiB values: heap grew by %d KiB", conns, grew>>10)
	if grew > 32<<20 {
		t.Errorf("heap grew by %d MiB", grew>>20)
	}
}

// TestStoreLimits: writes past MaxStoredKeys or MaxStoredBytes, replies
// past MaxResponse and connections past MaxConns are refused, and the
// client that asked sees an error; others carry on.
func TestStoreLimits(t *testing.T) {
	srv := startServer(t, tcpstore.WithLimits(tcpstore.Limits{
		MaxStoredKeys: 3, MaxStoredBytes: 100, MaxResponse: 50, MaxConns: 4,
	}))
	ctx := testContext(t)
	c := dial(t, srv.Addr().String(), tcpstore.WithVersion(tcpstore.Version2))
	for _, k := range []string{"a", "b", "c"} {
		if _, err := c.Add(ctx, k, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Add(ctx, "d", 1); err == nil {
		t.Error("a fourth key over MaxStoredKeys=3 was stored")
	}
	if _, err := c.CompareSet(ctx, "a", []byte("1"), []byte(strings.Repeat("x", 100))); err == nil {
		t.Error("a value over MaxStoredBytes=100 was stored")
	}
	// CompareSet, unlike Set, is done when it returns.
	if _, err := c.CompareSet(ctx, "a", []byte("1"), []byte(strings.Repeat("x", 30))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MultiGet(ctx, "a", "a"); err == nil {
		t.Error("a reply over MaxResponse=50 was sent")
	}
	if v, err := c.Get(ctx, "a"); err != nil || len(v) != 30 {
		t.Errorf("Get = %q, %v", v, err)
	}

	// c holds one connection; three more fill MaxConns. A connection the
	// server ended above may count a moment longer: each is dialled until
	// the server takes it.
	var rs []*raw
	for range 3 {
		var r *raw
		waitFor(t, func() bool {
			if r = dialRaw2(t, srv); served(r) {
				return true
			}
			r.nc.Close()
			return false
		})
		rs = append(rs, r)
	}
	over := dialRaw(t, srv)
	over.expectClosed()
	rs[0].nc.Close()
	waitFor(t, func() bool {
		r := dialRaw2(t, srv)
		defer r.nc.Close()
		return served(r)
	})
}

// served reports whether the server answers a CHECK on r: it took the
// connection rather than refuse it.
func served(r *raw) bool {
	r.nc.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := r.nc.Write(q(v2Check).keys()); err != nil {
		return false
	}
	var b [1]byte
	_, err := r.nc.Read(b[:])
	return err == nil
}

// TestWaitsCountAsStored: the keys of outstanding WAITs count against
// MaxStoredBytes, so waits cannot hold more memory than keys could.
func TestWaitsCountAsStored(t *testing.T) {
	srv := startServer(t, tcpstore.WithLimits(tcpstore.Limits{MaxStoredBytes: 100}))
	small := dialRaw2(t, srv)
	small.send(q(v2Wait).keys(strings.Repeat("k", 60)))
	small.expectQuiet()
	big := dialRaw2(t, srv)
	big.send(q(v2Wait).keys(strings.Repeat("j", 60)))
	big.expectClosed()
	small.nc.Close()
	waitFor(t, func() bool { // the first wait's bytes are given back
		r := dialRaw2(t, srv)
		defer r.nc.Close()
		r.send(q(v2Wait).keys(strings.Repeat("j", 60)))
		r.nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		var b [1]byte
		_, err := r.nc.Read(b[:])
		return errors.Is(err, os.ErrDeadlineExceeded)
	})
}

// TestRequireToken: with RequireToken, clients given the token are served
// in either dialect; clients without it, or with another, are dropped.
func TestRequireToken(t *testing.T) {
	srv := startServer(t, tcpstore.RequireToken("s3cret"))
	for _, v := range []tcpstore.Version{tcpstore.VersionAuto, tcpstore.Version1, tcpstore.Version2} {
		c := dial(t, srv.Addr().String(), tcpstore.WithVersion(v), tcpstore.WithToken("s3cret"))
		ctx := testContext(t)
		if _, err := c.Add(ctx, "n", 1); err != nil {
			t.Errorf("%v with the token: %v", v, err)
		}
		if v == tcpstore.VersionAuto && c.Version() != tcpstore.Version2 {
			t.Errorf("probed %v, want 2.x", c.Version())
		}
	}
	for _, token := range []string{"", "wrong"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := tcpstore.Dial(ctx, srv.Addr().String(), tcpstore.WithVersion(tcpstore.Version2), tcpstore.WithToken(token), tcpstore.WithTimeout(time.Second))
		if err == nil {
			_, err = c.Add(ctx, "n", 1)
			c.Close()
		}
		cancel()
		if err == nil {
			t.Errorf("a client with token %q was served", token)
		}
	}
	r := dialRaw2(t, srv)
	r.send(q(v2Set).str(tcpstore.TokenKey).str("s3cret"))
	r.roundTrip(q(v2Add).str("n").i64(1), reply().i64(4))
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLimitLogged: a refusal is logged at warning level, naming the limit.
func TestLimitLogged(t *testing.T) {
	var log syncBuffer
	srv := startServer(t,
		tcpstore.WithLimits(tcpstore.Limits{MaxResponse: 100}),
		tcpstore.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	r := dialRaw2(t, srv)
	r.send(q(multiGet).keys(make([]string, 20)...))
	r.expectClosed()
	waitFor(t, func() bool {
		return strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "over the limit MaxResponse=100")
	})
}
