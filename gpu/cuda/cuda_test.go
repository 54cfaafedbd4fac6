package cuda

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/gpu/cuda/fakecuda"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// These tests run everywhere: with or without cgo, with or without
// libcuda, with or without a GPU. Each says which case it met.

func TestOpenMissingLibrary(t *testing.T) {
	const name = "libgocomms-no-such-library.so.1"
	drv, err := openDriver(name)
	if err == nil || drv != nil {
		t.Fatalf("openDriver(%q) = %v, %v; want an error", name, drv, err)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %q does not match ErrUnavailable", err)
	}
	if !haveDriver {
		t.Logf("case: built without CUDA support: %v", err)
		if errors.Is(err, ErrNoLibrary) {
			t.Errorf("error %q matches ErrNoLibrary; the build, not the library, is missing", err)
		}
		if !strings.Contains(err.Error(), "cgo") && !strings.Contains(err.Error(), "Linux only") {
			t.Errorf("error %q does not say why CUDA is unavailable", err)
		}
		return
	}
	t.Logf("case: cgo build, library missing: %v", err)
	if !errors.Is(err, ErrNoLibrary) {
		t.Errorf("error %q does not match ErrNoLibrary", err)
	}
	for _, want := range []string{name, "NVIDIA driver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestOpenHere opens whatever this machine has. TestFakeDriver also runs
// it against a fake driver that finds no GPU.
func TestOpenHere(t *testing.T) {
	drv, err := Open()
	switch {
	case err == nil:
		if !haveDriver {
			t.Fatal("Open succeeded in a build without CUDA support")
		}
		major, minor := drv.Version()
		devs, err := drv.Devices()
		if err != nil {
			t.Fatalf("Devices: %v", err)
		}
		t.Logf("case: driver for CUDA %d.%d, %d devices", major, minor, len(devs))
	case !errors.Is(err, ErrUnavailable):
		t.Fatalf("Open: %v; want an error matching ErrUnavailable", err)
	case !haveDriver:
		t.Logf("case: built without CUDA support: %v", err)
	case errors.Is(err, ErrNoLibrary):
		if !strings.Contains(err.Error(), LibraryName) {
			t.Errorf("Open: %q does not name %s", err, LibraryName)
		}
		t.Logf("case: no libcuda on this machine: %v", err)
	case errors.Is(err, ErrNoDevice):
		if !errors.Is(err, ResultNoDevice) || !strings.Contains(err.Error(), "nvidia-smi") {
			t.Errorf("Open: %q; want the driver's CUDA_ERROR_NO_DEVICE and a hint", err)
		}
		t.Logf("case: the driver finds no GPU: %v", err)
	default:
		t.Logf("case: the driver will not initialize: %v", err)
	}
}

func TestErrors(t *testing.T) {
	err := error(&Error{Op: "cuMemAlloc_v2", Code: ResultOutOfMemory,
		Name: "CUDA_ERROR_OUT_OF_MEMORY", Text: "out of memory"})
	if !errors.Is(err, ResultOutOfMemory) || errors.Is(err, ResultInvalidValue) {
		t.Errorf("%v: errors.Is does not tell its Result", err)
	}
	if got, want := err.Error(), "gpu/cuda: cuMemAlloc_v2: out of memory (CUDA_ERROR_OUT_OF_MEMORY)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&Error{Op: "cuInit", Code: ResultNoDevice}).Error(),
		"gpu/cuda: cuInit: CUDA_ERROR_NO_DEVICE"; got != want {
		t.Errorf("Error() without the driver's words = %q, want %q", got, want)
	}
	if got, want := Result(12345).Error(), "CUresult 12345"; got != want {
		t.Errorf("unknown Result: %q, want %q", got, want)
	}
	if !errors.Is(ErrNoLibrary, ErrUnavailable) || !errors.Is(ErrNoDevice, ErrUnavailable) {
		t.Error("ErrNoLibrary and ErrNoDevice must match ErrUnavailable")
	}
	if errors.Is(ErrNoDevice, ErrNoLibrary) || errors.Is(ErrNoLibrary, ErrNoDevice) {
		t.Error("ErrNoLibrary and ErrNoDevice must be told apart")
	}
	for _, tc := range []struct {
		code Result
		kind error
		hint string
	}{
		{ResultNoDevice, ErrNoDevice, "CUDA_VISIBLE_DEVICES"},
		{ResultStubLibrary, ErrNoLibrary, "stub"},
		{ResultSystemDriverMismatch, ErrUnavailable, "will not initialize"},
	} {
		err := initFailed(LibraryName, &Error{Op: "cuInit", Code: tc.code})
		if !errors.Is(err, tc.kind) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, tc.code) {
			t.Errorf("cuInit failing with %v: %v does not match %v, ErrUnavailable and the code",
				tc.code, err, tc.kind)
		}
		if !strings.Contains(err.Error(), tc.hint) || strings.Count(err.Error(), prefix) != 1 {
			t.Errorf("cuInit failing with %v: %q; want one prefix and %q", tc.code, err, tc.hint)
		}
	}
}

// Objects not made by this package, or nil, fail with ErrInvalid rather
// than reach the driver.
func TestZeroValues(t *testing.T) {
	must := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", what, err)
		}
	}
	var (
		nilDrv *Driver
		nilDev *Device
		nilMem *DeviceMemory
		nilPin *HostMemory
		nilS   *Stream
		nilE   *Event
	)
	_, err := nilDrv.Devices()
	must("nil Driver Devices", err)
	_, err = (&Driver{}).Devices()
	must("zero Driver Devices", err)
	_, err = nilDev.PrimaryContext()
	must("nil Device PrimaryContext", err)
	_, err = (&Device{}).PrimaryContext()
	must("zero Device PrimaryContext", err)
	for name, c := range map[string]*Context{"nil": nil, "zero": {}} {
		_, err = c.Alloc(8)
		must(name+" Context Alloc", err)
		_, err = c.AllocHost(8)
		must(name+" Context AllocHost", err)
		_, err = c.NewStream()
		must(name+" Context NewStream", err)
		_, err = c.NewEvent()
		must(name+" Context NewEvent", err)
		must(name+" Context CopyHtoD", c.CopyHtoD(nilMem, 0, make([]byte, 1)))
		must(name+" Context CopyDtoH", c.CopyDtoH(make([]byte, 1), nilMem, 0))
		must(name+" Context CopyDtoD", c.CopyDtoD(nilMem, 0, nilMem, 0, 1))
		must(name+" Context Memset", c.Memset(nilMem, 0, 1, 0))
		_, err = c.LoadModule([]byte(".version 7.8"))
		must(name+" Context LoadModule", err)
		_, err = c.NewIPCEvent()
		must(name+" Context NewIPCEvent", err)
		_, err = c.OpenIPC(IPCHandle{b: [64]byte{1}})
		must(name+" Context OpenIPC", err)
		_, err = c.OpenIPCEvent(IPCEventHandle{b: [64]byte{1}})
		must(name+" Context OpenIPCEvent", err)
		must(name+" Context Close", c.Close())
	}
	for name, s := range map[string]*Stream{"nil": nilS, "zero": {}} {
		must(name+" Stream CopyHtoD", s.CopyHtoD(nilMem, 0, nil))
		must(name+" Stream CopyDtoH", s.CopyDtoH(nil, nilMem, 0))
		must(name+" Stream CopyDtoD", s.CopyDtoD(nilMem, 0, nilMem, 0, 0))
		must(name+" Stream Wait", s.Wait(nilE))
		must(name+" Stream Synchronize", s.Synchronize())
		_, err = s.Query()
		must(name+" Stream Query", err)
		must(name+" Stream Combine", s.Combine(reduce.New(reduce.Sum), tensor.Float32, nilMem, 0, nilMem, 0,
			nilMem, 0, 1))
		must(name+" Stream Finish", s.Finish(reduce.New(reduce.Avg), tensor.Float32, nilMem, 0, 1, 2))
		must(name+" Stream WriteValue32", s.WriteValue32(nilMem, 0, 1))
		must(name+" Stream WriteValue64", s.WriteValue64(nilMem, 0, 1))
		must(name+" Stream WaitValue32", s.WaitValue32(nilMem, 0, 1, WaitEQ))
		must(name+" Stream WaitValue64", s.WaitValue64(nilMem, 0, 1, WaitGEQ))
		must(name+" Stream Close", s.Close())
	}
	for name, m := range map[string]*Module{"nil": nil, "zero": {}} {
		_, err = m.Function("gc_sum_f32")
		must(name+" Module Function", err)
		must(name+" Module Close", m.Close())
	}
	for name, e := range map[string]*Event{"nil": nilE, "zero": {}} {
		must(name+" Event Record", e.Record(nilS))
		must(name+" Event Synchronize", e.Synchronize())
		_, err = e.Query()
		must(name+" Event Query", err)
		_, err = e.Elapsed(nilE)
		must(name+" Event Elapsed", err)
		_, err = e.IPCHandle()
		must(name+" Event IPCHandle", err)
		must(name+" Event Close", e.Close())
	}
	for name, m := range map[string]*DeviceMemory{"nil": nilMem, "zero": {}} {
		_, err = m.IPCHandle()
		must(name+" DeviceMemory IPCHandle", err)
	}
	for name, closer := range map[string]interface{ Close() error }{
		"nil DeviceMemory": nilMem, "zero DeviceMemory": &DeviceMemory{},
		"nil HostMemory": nilPin, "zero HostMemory": &HostMemory{},
	} {
		must(name+" Close", closer.Close())
	}
	major, minor := nilDrv.Version()
	ccMajor, ccMinor := nilDev.ComputeCapability()
	if major != 0 || minor != 0 || ccMajor != 0 || ccMinor != 0 || nilDev.Ordinal() != 0 ||
		nilDev.Name() != "" || nilDev.PCIBusID() != "" || nilDev.TotalMem() != 0 ||
		(*Context)(nil).Device() != nil || nilMem.Len() != 0 || nilMem.Ptr() != 0 ||
		nilPin.Len() != 0 || nilPin.Bytes() != nil || (&HostMemory{}).Bytes() != nil ||
		(*Function)(nil).Name() != "" {
		t.Error("accessors of nil objects return non-zero values")
	}
}

// TestFakeDriver runs the device tests against package fakecuda's
// stand-in libcuda.so.1, whose devices are host memory, found ahead of any
// real driver through LD_LIBRARY_PATH. It exercises every entry point this
// package binds, and the order the package relies on, where there is no
// GPU; what a real GPU does differently (timing, concurrency, its memory)
// only a real GPU shows.
func TestFakeDriver(t *testing.T) {
	if !haveDriver {
		t.Skip("skip: this build cannot load libcuda at all (no cgo, or not Linux)")
	}
	dir := fakecuda.BuildFor(t)
	run := func(t *testing.T, devices, tests string, require bool) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run="+tests, "-test.v", "-test.count=1",
			"-test.timeout=120s")
		// A wait still unmet after 2 s says so, and goes on waiting.
		n, _ := strconv.Atoi(devices)
		cmd.Env = append(os.Environ(), fakecuda.Env(dir, n, 2000, require)...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s against fakecuda with %s devices:\n%s", tests, devices, out)
		if err != nil {
			t.Fatalf("%s against fakecuda: %v", tests, err)
		}
		return string(out)
	}
	t.Run("devices", func(t *testing.T) {
		out := run(t, "3", "^TestDevice", true)
		for _, name := range deviceTests {
			if !strings.Contains(out, "--- PASS: "+name+" ") {
				t.Errorf("%s did not pass against fakecuda", name)
			}
		}
		if strings.Contains(out, "fakecuda: leak") {
			t.Error("a context was released with objects still live in it")
		}
	})
	// A wait never met holds the stream, as on a GPU, until the test's
	// own deadline fails it; the fake names the wait meanwhile.
	t.Run("wait never met", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWaitNeverMet$", "-test.v", "-test.count=1", "-test.timeout=3s")
		cmd.Env = append(os.Environ(), append(fakecuda.Env(dir, 1, 500, true), neverMetVar+"=1")...)
		out, err := cmd.CombinedOutput()
		named := regexp.MustCompile(`fakecuda: a stream has waited \d+ ms for the 32-bit word at 0x[0-9a-f]+ to be == 1`)
		if err == nil || !strings.Contains(string(out), "panic: test timed out") || !named.Match(out) {
			t.Errorf("a wait never met: %v; want the test's deadline to fail it, the fake naming the wait:\n%s", err, out)
		}
	})
	t.Run("no device", func(t *testing.T) {
		out := run(t, "0", "^TestOpenHere$", false)
		if !strings.Contains(out, "case: the driver finds no GPU") {
			t.Error("Open did not report ErrNoDevice for a driver without GPUs")
		}
	})
}

// neverMetVar marks the child of TestFakeDriver that runs TestWaitNeverMet.
const neverMetVar = "GOCOMMS_CUDA_WAIT_NEVER_MET"

// TestWaitNeverMet queues a wait no one meets and synchronizes: it holds
// until the test's deadline, as a GPU would.
func TestWaitNeverMet(t *testing.T) {
	if os.Getenv(neverMetVar) == "" {
		t.Skip("skip: runs in TestFakeDriver's child, whose deadline it meets")
	}
	ctx := testContext(t, testDevices(t)[0])
	s := need{t}.stream(ctx.NewStream())
	m := need{t}.mem(ctx.Alloc(8))
	ok(t, ctx.Memset(m, 0, 8, 0))
	ok(t, s.WaitValue32(m, 0, 1, WaitEQ))
	t.Errorf("Synchronize after a wait never met returned: %v", s.Synchronize())
}
