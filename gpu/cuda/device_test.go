package cuda

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The tests in this file need the CUDA driver and a GPU, or the fake
// driver TestFakeDriver builds. They skip without one, saying why, unless
// GOCOMMS_CUDA_REQUIRE=1 says that this machine has one, in which case
// they fail. TestFakeDriver checks that each of deviceTests passed.
var deviceTests = []string{
	"TestDeviceInfo",
	"TestDevicePrimaryContext",
	"TestDeviceRoundTrip",
	"TestDeviceMemset",
	"TestDeviceAsync",
	"TestDeviceQuery",
	"TestDeviceStreamWait",
	"TestDeviceNonBlocking",
	"TestDeviceLegacyOrder",
	"TestDeviceMisuse",
	"TestDeviceDriverErrors",
	"TestDeviceCloseContext",
	"TestDeviceConcurrent",
	"TestDeviceReduce",
	"TestDeviceReduceOrder",
	"TestDeviceReduceMisuse",
	"TestDeviceReduceConcurrent",
	"TestDeviceFold",
	"TestDeviceFoldMisuse",
	"TestDeviceModule",
	"TestDeviceIPC",
	"TestDeviceStreamValues",
	"TestDeviceMemOps",
	"TestDeviceStreamPingPong",
	"TestDeviceIPCProcesses",
}

func testDevices(t testing.TB) []*Device {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("GOCOMMS_CUDA_REQUIRE") == "1" {
			t.Fatalf("GOCOMMS_CUDA_REQUIRE=1, but "+format, args...)
		}
		t.Skipf("skip: "+format, args...)
	}
	drv, err := Open()
	if err != nil {
		skip("no CUDA driver: %v", err)
	}
	devs, err := drv.Devices()
	if err != nil {
		skip("no GPU: %v", err)
	}
	return devs
}

// testContext retains dev's primary context, to be closed, without error,
// when the test ends.
func testContext(t testing.TB, dev *Device) *Context {
	t.Helper()
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatalf("PrimaryContext of device %d: %v", dev.Ordinal(), err)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			t.Errorf("Context.Close: %v", err)
		}
	})
	return ctx
}

// need fails the test if making an object failed, and returns the object.
type need struct{ t testing.TB }

func (n need) ctx(c *Context, err error) *Context {
	n.t.Helper()
	ok(n.t, err)
	return c
}

func (n need) mem(m *DeviceMemory, err error) *DeviceMemory {
	n.t.Helper()
	ok(n.t, err)
	return m
}

func (n need) host(h *HostMemory, err error) *HostMemory {
	n.t.Helper()
	ok(n.t, err)
	return h
}

func (n need) stream(s *Stream, err error) *Stream {
	n.t.Helper()
	ok(n.t, err)
	return s
}

func (n need) event(e *Event, err error) *Event {
	n.t.Helper()
	ok(n.t, err)
	return e
}

func ok(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Errorf("%s: %v; want an error matching %q", what, err, kind)
	}
}

func pattern(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestDeviceInfo(t *testing.T) {
	devs := testDevices(t)
	drv, err := Open()
	ok(t, err)
	if major, minor := drv.Version(); major < 11 {
		t.Errorf("Version() = %d.%d; the _v2 entry points this package binds need CUDA 11", major, minor)
	}
	if want := os.Getenv("GOCOMMS_FAKECUDA_DEVICES"); want != "" && strconv.Itoa(len(devs)) != want {
		t.Errorf("%d devices; the fake driver was told %s", len(devs), want)
	}
	busID := regexp.MustCompile(`^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$`)
	seen := make(map[string]bool)
	for i, d := range devs {
		major, minor := d.ComputeCapability()
		t.Logf("device %d: %q at %s, %d MiB, compute capability %d.%d", d.Ordinal(), d.Name(),
			d.PCIBusID(), d.TotalMem()>>20, major, minor)
		switch {
		case d.Ordinal() != i:
			t.Errorf("device %d has ordinal %d", i, d.Ordinal())
		case d.Name() == "":
			t.Errorf("device %d has no name", i)
		case !busID.MatchString(d.PCIBusID()):
			t.Errorf("device %d: PCI bus ID %q", i, d.PCIBusID())
		case seen[d.PCIBusID()]:
			t.Errorf("device %d: PCI bus ID %q seen twice", i, d.PCIBusID())
		case d.TotalMem() == 0:
			t.Errorf("device %d: no memory", i)
		case major < 3:
			t.Errorf("device %d: compute capability %d.%d", i, major, minor)
		}
		seen[d.PCIBusID()] = true
	}
}

func TestDevicePrimaryContext(t *testing.T) {
	for _, dev := range testDevices(t) {
		a := need{t}.ctx(dev.PrimaryContext())
		b := need{t}.ctx(dev.PrimaryContext()) // a second reference to the same context
		if a.Device() != dev || b.Device() != dev {
			t.Fatalf("device %d: Context.Device() is not the device", dev.Ordinal())
		}
		m := need{t}.mem(a.Alloc(16))
		ok(t, b.Close())
		// The context lives on through a's reference.
		in := pattern(16, 1)
		ok(t, a.CopyHtoD(m, 0, in))
		out := make([]byte, 16)
		ok(t, a.CopyDtoH(out, m, 0))
		if !bytes.Equal(out, in) {
			t.Errorf("device %d: %x after a round trip of %x", dev.Ordinal(), out, in)
		}
		ok(t, a.Close())
		wantErr(t, "second Context.Close", a.Close(), ErrClosed)
		_, err := a.Alloc(1)
		wantErr(t, "Alloc after Close", err, ErrClosed)
		wantErr(t, "DeviceMemory.Close after the context's", m.Close(), ErrClosed)
	}
}

func TestDeviceRoundTrip(t *testing.T) {
	devs := testDevices(t)
	for _, dev := range []*Device{devs[0], devs[len(devs)-1]} {
		ctx := testContext(t, dev)
		for _, n := range []int{0, 1, 7, 4099, 1 << 20} {
			a := need{t}.mem(ctx.Alloc(n))
			b := need{t}.mem(ctx.Alloc(n))
			if a.Len() != n || (n > 0 && (a.Ptr() == 0 || a.Ptr() == b.Ptr())) {
				t.Fatalf("Alloc(%d): Len %d, Ptr %#x and %#x", n, a.Len(), a.Ptr(), b.Ptr())
			}
			in := pattern(n, uint64(dev.Ordinal()))
			out := bytes.Repeat([]byte{0xee}, n)
			ok(t, ctx.CopyHtoD(a, 0, in))
			ok(t, ctx.CopyDtoD(b, 0, a, 0, n))
			ok(t, ctx.CopyDtoH(out, b, 0))
			if !bytes.Equal(out, in) {
				t.Errorf("device %d, %d bytes: the round trip changed them", dev.Ordinal(), n)
			}
			ok(t, a.Close())
			ok(t, b.Close())
		}
		// Ranges inside one allocation.
		m := need{t}.mem(ctx.Alloc(100))
		ok(t, ctx.CopyHtoD(m, 10, []byte("hello")))
		ok(t, ctx.CopyDtoD(m, 95, m, 10, 5))
		ok(t, ctx.CopyDtoD(m, 12, m, 10, 0))
		out := make([]byte, 7)
		ok(t, ctx.CopyDtoH(out[1:6], m, 95))
		if string(out) != "\x00hello\x00" {
			t.Errorf("device %d: %q copied within an allocation", dev.Ordinal(), out)
		}
		ok(t, m.Close())
	}
}

func TestDeviceMemset(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	m := need{t}.mem(ctx.Alloc(1000))
	ok(t, ctx.Memset(m, 0, 1000, 0xab))
	ok(t, ctx.Memset(m, 100, 50, 0x01))
	ok(t, ctx.Memset(m, 999, 1, 0x02))
	ok(t, ctx.Memset(m, 10, 0, 0xff))
	out := make([]byte, 1000)
	ok(t, ctx.CopyDtoH(out, m, 0))
	for i, b := range out {
		want := byte(0xab)
		switch {
		case i >= 100 && i < 150:
			want = 0x01
		case i == 999:
			want = 0x02
		}
		if b != want {
			t.Fatalf("byte %d is %#x, want %#x", i, b, want)
		}
	}
	ok(t, m.Close())
}

func TestDeviceAsync(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	const n = 1<<20 + 3
	in := need{t}.host(ctx.AllocHost(n))
	out := need{t}.host(ctx.AllocHost(n))
	if in.Len() != n || len(in.Bytes()) != n {
		t.Fatalf("AllocHost(%d): Len %d, %d bytes", n, in.Len(), len(in.Bytes()))
	}
	copy(in.Bytes(), pattern(n, 2))
	clear(out.Bytes())
	d1 := need{t}.mem(ctx.Alloc(n))
	d2 := need{t}.mem(ctx.Alloc(n))
	s := need{t}.stream(ctx.NewStream())
	start := need{t}.event(ctx.NewEvent())
	end := need{t}.event(ctx.NewEvent())

	ok(t, start.Record(s))
	ok(t, s.CopyHtoD(d1, 0, in.Bytes()))
	ok(t, s.CopyDtoD(d2, 0, d1, 0, n))
	ok(t, s.CopyDtoH(out.Bytes()[:n-7], d2, 0))
	ok(t, s.CopyDtoH(out.Bytes()[n-7:], d2, n-7)) // a slice inside pinned memory
	ok(t, s.CopyHtoD(d1, 0, in.Bytes()[:0]))
	ok(t, end.Record(s))
	ok(t, end.Synchronize())
	if !bytes.Equal(out.Bytes(), in.Bytes()) {
		t.Error("the asynchronous round trip changed the bytes")
	}
	for what, query := range map[string]func() (bool, error){"end": end.Query, "stream": s.Query} {
		if done, err := query(); !done || err != nil {
			t.Errorf("%s Query after the end event's Synchronize = %v, %v", what, done, err)
		}
	}
	elapsed, err := end.Elapsed(start)
	if err != nil || elapsed < 0 || elapsed > time.Minute {
		t.Errorf("Elapsed = %v, %v", elapsed, err)
	}
	ok(t, s.Synchronize())
	for _, c := range []interface{ Close() error }{end, start, s, d2, d1, out, in} {
		ok(t, c.Close())
	}
}

// TestDeviceQuery polls for completion, as a progress loop does, instead
// of waiting.
func TestDeviceQuery(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	const n = 4096
	pin := need{t}.host(ctx.AllocHost(2 * n))
	in, out := pin.Bytes()[:n], pin.Bytes()[n:]
	copy(in, pattern(n, 3))
	clear(out)
	d := need{t}.mem(ctx.Alloc(n))
	s := need{t}.stream(ctx.NewStream())
	e := need{t}.event(ctx.NewEvent())
	if done, err := e.Query(); !done || err != nil {
		t.Errorf("Query of an event never recorded = %v, %v; want true", done, err)
	}
	for i := 0; i < n; i += 512 {
		ok(t, s.CopyHtoD(d, i, in[i:i+512]))
	}
	ok(t, s.CopyDtoH(out, d, 0))
	ok(t, e.Record(s))
	poll := func(what string, query func() (bool, error)) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			done, err := query()
			if err != nil {
				t.Fatalf("%s Query: %v", what, err)
			}
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s Query: not done after 10s", what)
			}
		}
	}
	poll("event", e.Query)
	if !bytes.Equal(out, in) {
		t.Error("the copies were not done when the event's Query said so")
	}
	ok(t, s.CopyHtoD(d, 0, out))
	poll("stream", s.Query)
}

// TestDeviceNonBlocking reads device memory on a non-blocking stream
// while another stream of the context waits for a flag, which the reader
// then raises.
func TestDeviceNonBlocking(t *testing.T) {
	need := need{t}
	ctx := testContext(t, testDevices(t)[0])
	mem := need.mem(ctx.Alloc(16))
	ok(t, ctx.Memset(mem, 0, 8, 0))
	ok(t, ctx.CopyHtoD(mem, 8, []byte{42, 0, 0, 0, 0, 0, 0, 0}))
	stalled := need.stream(ctx.NewStream())
	ok(t, stalled.WaitValue64(mem, 0, 1, WaitGEQ))
	reader := need.stream(ctx.NewNonBlockingStream())
	pin := need.host(ctx.AllocHost(8))
	start := time.Now()
	ok(t, reader.CopyDtoH(pin.Bytes(), mem, 8))
	ok(t, reader.Synchronize())
	if took := time.Since(start); took > time.Second {
		t.Errorf("a non-blocking stream's copy took %v beside a stalled stream", took)
	}
	if pin.Bytes()[0] != 42 {
		t.Errorf("read %d, want 42", pin.Bytes()[0])
	}
	ok(t, reader.WriteValue64(mem, 0, 1))
	ok(t, reader.Synchronize())
	ok(t, stalled.Synchronize())
}

// TestDeviceStreamWait makes one stream's work wait for another's through
// an event, and synchronizes only the second.
func TestDeviceStreamWait(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	const n = 1 << 16
	in := need{t}.host(ctx.AllocHost(n))
	out := need{t}.host(ctx.AllocHost(n))
	copy(in.Bytes(), pattern(n, 4))
	clear(out.Bytes())
	d1 := need{t}.mem(ctx.Alloc(n))
	d2 := need{t}.mem(ctx.Alloc(n))
	a := need{t}.stream(ctx.NewStream())
	b := need{t}.stream(ctx.NewStream())
	e := need{t}.event(ctx.NewEvent())

	ok(t, a.CopyHtoD(d1, 0, in.Bytes()))
	ok(t, e.Record(a))
	ok(t, b.Wait(e))
	ok(t, b.CopyDtoD(d2, 0, d1, 0, n))
	ok(t, b.CopyDtoH(out.Bytes(), d2, 0))
	ok(t, b.Synchronize())
	if !bytes.Equal(out.Bytes(), in.Bytes()) {
		t.Error("stream b did not wait for stream a's copy")
	}
	if done, err := e.Query(); !done || err != nil {
		t.Errorf("event Query after the waiting stream finished = %v, %v", done, err)
	}
}

// TestDeviceLegacyOrder checks the ordering the package documents: the
// context's synchronous copies come after the work queued on its streams.
func TestDeviceLegacyOrder(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	const n = 1 << 16
	pin := need{t}.host(ctx.AllocHost(n))
	copy(pin.Bytes(), pattern(n, 5))
	d := need{t}.mem(ctx.Alloc(n))
	s := need{t}.stream(ctx.NewStream())
	ok(t, s.CopyHtoD(d, 0, pin.Bytes()))
	out := make([]byte, n)
	ok(t, ctx.CopyDtoH(out, d, 0))
	if !bytes.Equal(out, pin.Bytes()) {
		t.Error("CopyDtoH did not come after the stream's copy")
	}
}

func TestDeviceMisuse(t *testing.T) {
	devs := testDevices(t)
	ctx := testContext(t, devs[0])
	other := testContext(t, devs[len(devs)-1])
	m := need{t}.mem(ctx.Alloc(8))
	pin := need{t}.host(ctx.AllocHost(8))
	s := need{t}.stream(ctx.NewStream())
	e := need{t}.event(ctx.NewEvent())
	otherMem := need{t}.mem(other.Alloc(8))
	otherPin := need{t}.host(other.AllocHost(8))
	otherS := need{t}.stream(other.NewStream())
	otherE := need{t}.event(other.NewEvent())

	// Ranges and sizes.
	wantErr(t, "CopyHtoD past the end", ctx.CopyHtoD(m, 1, make([]byte, 8)), ErrInvalid)
	wantErr(t, "CopyHtoD at a negative offset", ctx.CopyHtoD(m, -1, make([]byte, 1)), ErrInvalid)
	wantErr(t, "CopyDtoH past the end", ctx.CopyDtoH(make([]byte, 9), m, 0), ErrInvalid)
	wantErr(t, "CopyDtoD of overlapping ranges", ctx.CopyDtoD(m, 0, m, 2, 4), ErrInvalid)
	wantErr(t, "CopyDtoD of a negative length", ctx.CopyDtoD(m, 0, m, 4, -1), ErrInvalid)
	wantErr(t, "Memset past the end", ctx.Memset(m, 0, 9, 0), ErrInvalid)
	wantErr(t, "Stream.CopyDtoD past the end", s.CopyDtoD(m, 4, m, 0, 5), ErrInvalid)
	_, err := ctx.Alloc(-1)
	wantErr(t, "Alloc(-1)", err, ErrInvalid)
	_, err = ctx.AllocHost(-1)
	wantErr(t, "AllocHost(-1)", err, ErrInvalid)

	// Objects of another context.
	wantErr(t, "CopyHtoD to another context's memory", ctx.CopyHtoD(otherMem, 0, make([]byte, 1)), ErrInvalid)
	wantErr(t, "CopyDtoD from another context's memory", ctx.CopyDtoD(m, 0, otherMem, 0, 1), ErrInvalid)
	wantErr(t, "Record on another context's stream", e.Record(otherS), ErrInvalid)
	wantErr(t, "Wait for another context's event", s.Wait(otherE), ErrInvalid)
	_, err = e.Elapsed(otherE)
	wantErr(t, "Elapsed since another context's event", err, ErrInvalid)
	wantErr(t, "Stream.CopyHtoD from another context's pinned memory", s.CopyHtoD(m, 0, otherPin.Bytes()), ErrInvalid)

	// A stream's copies take only pinned memory.
	wantErr(t, "Stream.CopyHtoD from Go memory", s.CopyHtoD(m, 0, make([]byte, 8)), ErrInvalid)
	wantErr(t, "Stream.CopyDtoH to Go memory", s.CopyDtoH(make([]byte, 8), m, 0), ErrInvalid)
	ok(t, s.CopyDtoH(pin.Bytes()[2:6], m, 0))
	ok(t, s.Synchronize())

	// Double frees and use after Close.
	old := pin.Bytes()
	ok(t, pin.Close())
	wantErr(t, "second HostMemory.Close", pin.Close(), ErrClosed)
	if pin.Bytes() != nil {
		t.Error("Bytes of closed HostMemory is not nil")
	}
	wantErr(t, "Stream.CopyHtoD from freed pinned memory", s.CopyHtoD(m, 0, old), ErrInvalid)
	ok(t, m.Close())
	wantErr(t, "second DeviceMemory.Close", m.Close(), ErrClosed)
	wantErr(t, "CopyHtoD to freed memory", ctx.CopyHtoD(m, 0, []byte{1}), ErrClosed)
	wantErr(t, "CopyDtoH from freed memory", ctx.CopyDtoH([]byte{1}, m, 0), ErrClosed)
	wantErr(t, "Memset of freed memory", ctx.Memset(m, 0, 1, 0), ErrClosed)
	ok(t, s.Close())
	wantErr(t, "second Stream.Close", s.Close(), ErrClosed)
	wantErr(t, "Synchronize of a closed stream", s.Synchronize(), ErrClosed)
	_, err = s.Query()
	wantErr(t, "Query of a closed stream", err, ErrClosed)
	wantErr(t, "Record on a closed stream", e.Record(s), ErrClosed)
	ok(t, e.Close())
	wantErr(t, "second Event.Close", e.Close(), ErrClosed)
	wantErr(t, "Synchronize of a closed event", e.Synchronize(), ErrClosed)
	_, err = e.Query()
	wantErr(t, "Query of a closed event", err, ErrClosed)
	s2 := need{t}.stream(ctx.NewStream())
	wantErr(t, "Wait for a closed event", s2.Wait(e), ErrClosed)
}

// TestDeviceDriverErrors checks errors that only the driver finds, and
// what they carry.
func TestDeviceDriverErrors(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	start := need{t}.event(ctx.NewEvent())
	end := need{t}.event(ctx.NewEvent())
	_, err := end.Elapsed(start)
	var cerr *Error
	if !errors.Is(err, ResultInvalidHandle) || !errors.As(err, &cerr) {
		t.Fatalf("Elapsed between events never recorded: %v; want an *Error matching ResultInvalidHandle", err)
	}
	if cerr.Op != "cuEventElapsedTime" || cerr.Name != "CUDA_ERROR_INVALID_HANDLE" || cerr.Text == "" {
		t.Errorf("Elapsed: %+v; want the entry point and the driver's name and words", cerr)
	}
	_, err = ctx.Alloc(1 << 50)
	if !errors.Is(err, ResultOutOfMemory) || !errors.As(err, &cerr) || cerr.Op != "cuMemAlloc_v2" {
		t.Errorf("Alloc of a PiB: %v; want cuMemAlloc_v2's ResultOutOfMemory", err)
	}
	t.Logf("driver errors: %v", err)
}

// TestDeviceCloseContext leaves objects open, and work queued, for the
// context's Close, which waits for the work, frees the objects (the fake
// driver reports any it did not) and closes them to every later call.
func TestDeviceCloseContext(t *testing.T) {
	ctx := need{t}.ctx(testDevices(t)[0].PrimaryContext())
	m := need{t}.mem(ctx.Alloc(64))
	empty := need{t}.mem(ctx.Alloc(0))
	pin := need{t}.host(ctx.AllocHost(64))
	s := need{t}.stream(ctx.NewStream())
	e := need{t}.event(ctx.NewEvent())
	ok(t, s.CopyHtoD(m, 0, pin.Bytes()))
	ok(t, e.Record(s))
	ok(t, ctx.Close())

	wantErr(t, "Context.Close", ctx.Close(), ErrClosed)
	_, err := ctx.NewStream()
	wantErr(t, "NewStream", err, ErrClosed)
	_, err = ctx.NewEvent()
	wantErr(t, "NewEvent", err, ErrClosed)
	_, err = ctx.AllocHost(1)
	wantErr(t, "AllocHost", err, ErrClosed)
	wantErr(t, "CopyHtoD", ctx.CopyHtoD(m, 0, []byte{1}), ErrClosed)
	wantErr(t, "CopyDtoD", ctx.CopyDtoD(m, 0, empty, 0, 0), ErrClosed)
	wantErr(t, "Stream.CopyHtoD", s.CopyHtoD(m, 0, []byte{1}), ErrClosed)
	wantErr(t, "Stream.Wait", s.Wait(e), ErrClosed)
	wantErr(t, "Event.Record", e.Record(s), ErrClosed)
	_, err = e.Elapsed(e)
	wantErr(t, "Event.Elapsed", err, ErrClosed)
	if pin.Bytes() != nil {
		t.Error("Bytes of HostMemory in a closed context is not nil")
	}
	for name, c := range map[string]interface{ Close() error }{
		"DeviceMemory": m, "empty DeviceMemory": empty, "HostMemory": pin, "Stream": s, "Event": e,
	} {
		wantErr(t, name+".Close", c.Close(), ErrClosed)
	}
}

// TestDeviceConcurrent uses one context from many goroutines, then closes
// it while they still do: each call either works or reports ErrClosed.
func TestDeviceConcurrent(t *testing.T) {
	ctx := need{t}.ctx(testDevices(t)[0].PrimaryContext())
	const goroutines, before = 8, 3 // round trips each makes before the Close
	var wg, started sync.WaitGroup
	started.Add(goroutines)
	stop := make(chan struct{})
	errs := make(chan error, 16)
	for g := range goroutines {
		wg.Go(func() {
			ready := sync.OnceFunc(started.Done)
			defer ready() // one that failed early holds nobody up
			for i := 0; ; i++ {
				if i == before {
					ready()
				}
				select {
				case <-stop:
					return
				default:
				}
				if err := roundTrip(ctx, 1+(g*131+i*17)%5000, uint64(g)); err != nil {
					if !errors.Is(err, ErrClosed) {
						errs <- err
					}
					return
				}
			}
		})
	}
	// Close once every goroutine is under way, while they go on.
	waited := make(chan struct{})
	go func() {
		started.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Errorf("the goroutines did not make %d round trips each within a minute", before)
	}
	ok(t, ctx.Close())
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// roundTrip sends n bytes to the device, through a stream to a second
// allocation, and back, and checks them. It keeps its bytes in Go memory:
// the context may be closed at any time, freeing its pinned memory.
func roundTrip(ctx *Context, n int, seed uint64) error {
	in, out := pattern(n, seed), make([]byte, n)
	var objs []interface{ Close() error }
	defer func() {
		for _, o := range objs {
			o.Close()
		}
	}()
	a, err := ctx.Alloc(n)
	if err != nil {
		return err
	}
	objs = append(objs, a)
	b, err := ctx.Alloc(n)
	if err != nil {
		return err
	}
	objs = append(objs, b)
	s, err := ctx.NewStream()
	if err != nil {
		return err
	}
	objs = append(objs, s)
	for _, step := range []func() error{
		func() error { return ctx.CopyHtoD(a, 0, in) },
		func() error { return s.CopyDtoD(b, 0, a, 0, n) },
		s.Synchronize,
		func() error { return ctx.CopyDtoH(out, b, 0) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if !bytes.Equal(out, in) {
		return errors.New("concurrent round trip changed the bytes")
	}
	return nil
}
