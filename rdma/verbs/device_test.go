package verbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The tests in this file need an RDMA device: a NIC, or Soft-RoCE (rxe)
// over any Ethernet port. They skip without one, saying why, unless
// GOCOMMS_RDMA_REQUIRE=1 says that this machine has one, in which case
// they fail. GOCOMMS_RDMA_DEVICE picks the device (default: the first),
// GOCOMMS_RDMA_PORT the port (default 1), GOCOMMS_RDMA_GID_INDEX the GID
// on RoCE (default: the first non-zero one).

func deviceContext(t *testing.T) *Context {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("GOCOMMS_RDMA_REQUIRE") == "1" {
			t.Fatalf("GOCOMMS_RDMA_REQUIRE=1, but "+format, args...)
		}
		t.Skipf("skip: "+format, args...)
	}
	lib, err := Open()
	if err != nil {
		skip("no libibverbs: %v", err)
	}
	ctx, err := lib.OpenDevice(os.Getenv("GOCOMMS_RDMA_DEVICE"))
	if err != nil {
		skip("no RDMA device: %v", err)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			t.Errorf("Context.Close: %v", err)
		}
	})
	t.Logf("device %s: %+v", ctx.Name(), ctx.Attr())
	return ctx
}

func testPort(t *testing.T) uint8 {
	if s := os.Getenv("GOCOMMS_RDMA_PORT"); s != "" {
		p, err := strconv.ParseUint(s, 10, 8)
		if err != nil {
			t.Fatalf("GOCOMMS_RDMA_PORT=%q: %v", s, err)
		}
		return uint8(p)
	}
	return 1
}

// testGIDIndex returns the GID index to use on port: -1 on InfiniBand.
func testGIDIndex(t *testing.T, ctx *Context, port uint8) int {
	if s := os.Getenv("GOCOMMS_RDMA_GID_INDEX"); s != "" {
		i, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("GOCOMMS_RDMA_GID_INDEX=%q: %v", s, err)
		}
		return i
	}
	pa, err := ctx.QueryPort(port)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("port %d: %+v", port, pa)
	if pa.LinkLayer != LinkEthernet {
		return -1
	}
	for i := range pa.GIDTableLen {
		if g, err := ctx.QueryGID(port, i); err == nil && !g.IsZero() {
			t.Logf("GID index %d: %v", i, g)
			return i
		}
	}
	t.Fatalf("port %d is RoCE and has no GID: give the port's network device an address", port)
	return 0
}

// loopback is two queue pairs of one device connected to each other,
// each with its own completion queue and memory region.
type loopback struct {
	ctx        *Context
	pd         *PD
	cqA, cqB   *CQ
	a, b       *QP
	memA, memB *MR
}

func newLoopback(t *testing.T, depth int) *loopback {
	ctx := deviceContext(t)
	port := testPort(t)
	gid := testGIDIndex(t, ctx, port)
	l := &loopback{ctx: ctx}
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	l.pd, err = ctx.AllocPD()
	must(err)
	all := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic
	l.memA, err = l.pd.RegMR(make([]byte, 4096), all)
	must(err)
	l.memB, err = l.pd.RegMR(make([]byte, 4096), all)
	must(err)
	l.cqA, err = ctx.CreateCQ(depth)
	must(err)
	l.cqB, err = ctx.CreateCQ(depth)
	must(err)
	l.a, err = ctx.CreateQP(l.pd, l.cqA, l.cqA, QPCaps{})
	must(err)
	l.b, err = ctx.CreateQP(l.pd, l.cqB, l.cqB, QPCaps{})
	must(err)
	epA, err := l.a.Endpoint(port, gid, 0x1000)
	must(err)
	epB, err := l.b.Endpoint(port, gid, 0x2000)
	must(err)
	// The endpoints cross the wire in a real job: make them.
	epA, epB = viaWire(t, epA), viaWire(t, epB)
	t.Logf("A %v\nB %v", epA, epB)
	must(l.a.Connect(epA, epB))
	must(l.b.Connect(epB, epA))
	return l
}

func viaWire(t *testing.T, e Endpoint) Endpoint {
	b, err := e.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var d Endpoint
	if err := d.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return d
}

// pollOne polls cq until it has a completion.
func pollOne(t *testing.T, cq *CQ) Completion {
	t.Helper()
	var got [1]Completion
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := cq.Poll(got[:])
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if n == 1 {
			return got[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("no completion within 10 s")
		}
		runtime.Gosched()
	}
}

// wait polls cq for one successful completion of wrID, an op.
func wait(t *testing.T, cq *CQ, wrID uint64, op Opcode) Completion {
	t.Helper()
	c := pollOne(t, cq)
	if err := c.Err(); err != nil {
		t.Fatalf("completion: %v", err)
	}
	if c.WRID != wrID || c.Opcode != op {
		t.Fatalf("completion %+v, want work request %d, %v", c, wrID, op)
	}
	return c
}

func sge(t *testing.T, m *MR, off, n int) SGE {
	t.Helper()
	s, err := m.SGE(off, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func remote(t *testing.T, m *MR, off int) Remote {
	t.Helper()
	r, err := m.Remote(off)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pattern(seed byte, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i)*7
	}
	return p
}

func TestLoopbackDataPath(t *testing.T) {
	l := newLoopback(t, 64)
	bufA, bufB := l.memA.Bytes(), l.memB.Bytes()

	// write
	copy(bufA[0:], pattern(1, 64))
	if err := l.a.PostWrite(1, sge(t, l.memA, 0, 64), remote(t, l.memB, 0), Signaled); err != nil {
		t.Fatal(err)
	}
	wait(t, l.cqA, 1, OpWrite)
	if !bytes.Equal(bufB[0:64], pattern(1, 64)) {
		t.Fatalf("write: B holds %x", bufB[0:64])
	}

	// write with immediate data, consumed by a posted receive
	if err := l.b.PostRecv(2, SGE{}); err != nil {
		t.Fatal(err)
	}
	copy(bufA[64:], pattern(2, 64))
	if err := l.a.PostWriteImm(3, sge(t, l.memA, 64, 64), remote(t, l.memB, 128), 0xdeadbeef, Signaled); err != nil {
		t.Fatal(err)
	}
	wait(t, l.cqA, 3, OpWrite)
	c := wait(t, l.cqB, 2, OpRecvWriteImm)
	if !c.HasImm || c.Imm != 0xdeadbeef || c.ByteLen != 64 || c.QPN != l.b.QPN() {
		t.Fatalf("write-imm receive: %+v", c)
	}
	if !bytes.Equal(bufB[128:192], pattern(2, 64)) {
		t.Fatalf("write-imm: B holds %x", bufB[128:192])
	}

	// read
	copy(bufB[256:], pattern(3, 64))
	if err := l.a.PostRead(4, sge(t, l.memA, 256, 64), remote(t, l.memB, 256), Signaled); err != nil {
		t.Fatal(err)
	}
	wait(t, l.cqA, 4, OpRead)
	if !bytes.Equal(bufA[256:320], pattern(3, 64)) {
		t.Fatalf("read: A holds %x", bufA[256:320])
	}

	// send, into a posted receive
	if err := l.b.PostRecv(5, sge(t, l.memB, 1024, 64)); err != nil {
		t.Fatal(err)
	}
	copy(bufA[1024:], pattern(4, 32))
	if err := l.a.PostSend(6, sge(t, l.memA, 1024, 32), Signaled); err != nil {
		t.Fatal(err)
	}
	wait(t, l.cqA, 6, OpSend)
	if c := wait(t, l.cqB, 5, OpRecv); c.ByteLen != 32 || c.HasImm {
		t.Fatalf("send receive: %+v", c)
	}
	if !bytes.Equal(bufB[1024:1056], pattern(4, 32)) {
		t.Fatalf("send: B holds %x", bufB[1024:1056])
	}

	// fetch-add; the device's byte order for the operand is its own
	binary.NativeEndian.PutUint64(bufB[512:], 10)
	before := bytes.Clone(bufB[512:520])
	if err := l.a.PostFetchAdd(7, sge(t, l.memA, 512, 8), remote(t, l.memB, 512), 5, Signaled); err != nil {
		t.Fatal(err)
	}
	wait(t, l.cqA, 7, OpFetchAdd)
	var order binary.ByteOrder
	for _, o := range []binary.ByteOrder{binary.NativeEndian, binary.BigEndian} {
		if o.Uint64(bufA[512:]) == o.Uint64(before) && o.Uint64(bufB[512:]) == o.Uint64(before)+5 {
			order = o
			break
		}
	}
	if order == nil {
		t.Fatalf("fetch-add of 5 to %x: fetched %x, left %x", before, bufA[512:520], bufB[512:520])
	}
	t.Logf("atomics: the device reads operands in %v byte order", order)

	// compare-swap, which swaps, then one that does not
	order.PutUint64(bufB[520:], 100)
	if err := l.a.PostCompareSwap(8, sge(t, l.memA, 520, 8), remote(t, l.memB, 520), 100, 200, Signaled); err != nil {
		t.Fatal(err)
	}
	wait(t, l.cqA, 8, OpCompareSwap)
	if old, now := order.Uint64(bufA[520:]), order.Uint64(bufB[520:]); old != 100 || now != 200 {
		t.Fatalf("compare-swap 100->200: fetched %d, left %d", old, now)
	}
	if err := l.a.PostCompareSwap(9, sge(t, l.memA, 520, 8), remote(t, l.memB, 520), 100, 300, Signaled); err != nil {
		t.Fatal(err)
	}
	wait(t, l.cqA, 9, OpCompareSwap)
	if old, now := order.Uint64(bufA[520:]), order.Uint64(bufB[520:]); old != 200 || now != 200 {
		t.Fatalf("compare-swap 100->300 on 200: fetched %d, left %d", old, now)
	}

	// unsignaled requests complete silently; a signaled one after them
	// vouches for them
	for i := range 8 {
		if err := l.a.PostWrite(uint64(100+i), sge(t, l.memA, 0, 8), remote(t, l.memB, 2048+8*i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.a.PostWrite(108, sge(t, l.memA, 0, 8), remote(t, l.memB, 2048+64), Signaled); err != nil {
		t.Fatal(err)
	}
	wait(t, l.cqA, 108, OpWrite)

	// a bad rkey fails the request, with the library's words for why
	bad := remote(t, l.memB, 0)
	bad.RKey ^= 0xffffff
	if err := l.a.PostWrite(10, sge(t, l.memA, 0, 8), bad, Signaled); err != nil {
		t.Fatal(err)
	}
	c = pollOne(t, l.cqA)
	err := c.Err()
	var ce *CompletionError
	if !errors.Is(err, ErrCompletion) || !errors.As(err, &ce) || ce.WRID != 10 || ce.Text == "" {
		t.Fatalf("write with a bad rkey: %+v, Err() = %v", c, err)
	}
	t.Logf("bad rkey: %v", err)
}

func TestLoopbackLifetime(t *testing.T) {
	ctx := deviceContext(t)
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pd.RegMR(make([]byte, 64), AccessRemoteWrite); !errors.Is(err, ErrInvalid) {
		t.Errorf("RegMR(RemoteWrite without LocalWrite) = %v, want ErrInvalid", err)
	}
	mr, err := pd.RegMR(make([]byte, 64), AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mr.SGE(60, 8); !errors.Is(err, ErrInvalid) {
		t.Errorf("SGE past the end = %v, want ErrInvalid", err)
	}
	cq, err := ctx.CreateCQ(16)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := ctx.CreateQP(pd, cq, cq, QPCaps{MaxSendWR: 4, MaxRecvWR: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("QP %#x caps %+v, CQ depth %d", qp.QPN(), qp.Caps(), cq.Depth())
	if err := qp.PostWrite(1, SGE{}, Remote{}, Signaled); !errors.Is(err, ErrInvalid) {
		t.Errorf("PostWrite before Connect = %v, want ErrInvalid", err)
	}
	if _, err := qp.Endpoint(0, 0, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("Endpoint(port 0) = %v, want ErrInvalid", err)
	}
	if err := pd.Close(); !errors.Is(err, ErrBusy) {
		t.Errorf("PD.Close with an MR and a QP = %v, want ErrBusy", err)
	}
	if err := cq.Close(); !errors.Is(err, ErrBusy) {
		t.Errorf("CQ.Close with a QP = %v, want ErrBusy", err)
	}
	if err := qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := qp.Close(); err != nil {
		t.Errorf("second QP.Close: %v", err)
	}
	if err := qp.PostRecv(1, SGE{}); !errors.Is(err, ErrClosed) {
		t.Errorf("PostRecv after Close = %v, want ErrClosed", err)
	}
	if err := cq.Close(); err != nil {
		t.Errorf("CQ.Close after its QP's: %v", err)
	}
	if _, err := cq.Poll(make([]Completion, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Poll after Close = %v, want ErrClosed", err)
	}
	// The context's Close takes what is left: mr and pd.
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mr.SGE(0, 8); !errors.Is(err, ErrClosed) {
		t.Errorf("SGE after the context's Close = %v, want ErrClosed", err)
	}
	if _, err := pd.RegMR(make([]byte, 8), AccessLocalWrite); !errors.Is(err, ErrClosed) {
		t.Errorf("RegMR after the context's Close = %v, want ErrClosed", err)
	}
	if _, err := ctx.CreateCQ(1); !errors.Is(err, ErrClosed) {
		t.Errorf("CreateCQ after Close = %v, want ErrClosed", err)
	}
	for name, c := range map[string]interface{ Close() error }{"MR": mr, "PD": pd, "Context": ctx} {
		if err := c.Close(); err != nil {
			t.Errorf("%s.Close after the context's Close: %v", name, err)
		}
	}
}

// Posting and polling from several goroutines while the context closes
// under them ends every one of them with ErrClosed, and nothing crashes.
func TestLoopbackConcurrentClose(t *testing.T) {
	// Deep queues: the context may close B before A, and A's posts in
	// between fail and complete, signaled or not.
	l := newLoopback(t, 4096)
	var posts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		local, far := sge(t, l.memA, 8*g, 8), remote(t, l.memB, 8*g)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				// Unsignaled: on a device the send queue fills (ENOMEM)
				// until a signaled request retires them, which is fine.
				err := l.a.PostWrite(uint64(g<<32|i), local, far, 0)
				switch {
				case errors.Is(err, ErrClosed):
					errs <- nil
					return
				case err != nil && !errors.Is(err, syscall.ENOMEM):
					errs <- err
					return
				}
				posts.Add(1)
				runtime.Gosched()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]Completion, 16)
		for {
			if _, err := l.cqA.Poll(buf); errors.Is(err, ErrClosed) {
				errs <- nil
				return
			} else if err != nil {
				errs <- err
				return
			}
			runtime.Gosched()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for posts.Load() < 1000 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if err := l.ctx.Close(); err != nil {
		t.Fatalf("Close under load: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d posts before the close", posts.Load())
}

// The fast path allocates nothing: a post, and polling its completion.
func TestLoopbackAllocs(t *testing.T) {
	l := newLoopback(t, 64)
	local, far := sge(t, l.memA, 0, 64), remote(t, l.memB, 0)
	var got [4]Completion
	allocs := testing.AllocsPerRun(100, func() {
		if err := l.a.PostWrite(1, local, far, Signaled); err != nil {
			t.Fatal(err)
		}
		for {
			n, err := l.cqA.Poll(got[:])
			if err != nil || (n == 1 && got[0].Err() != nil) {
				t.Fatal(err, got[0].Err())
			}
			if n == 1 {
				return
			}
		}
	})
	if allocs != 0 {
		t.Errorf("post and poll: %v allocations, want 0", allocs)
	}
}
