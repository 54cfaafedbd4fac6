package verbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// These tests run everywhere: with or without cgo, with or without
// libibverbs, with or without a device. Each says which case it met.

func TestOpenMissingLibrary(t *testing.T) {
	const name = "libgocomms-no-such-library.so.1"
	lib, err := openLibrary(name)
	if err == nil || lib != nil {
		t.Fatalf("openLibrary(%q) = %v, %v; want an error", name, lib, err)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %q does not match ErrUnavailable", err)
	}
	if !haveVerbs {
		t.Logf("case: built without libibverbs support: %v", err)
		if errors.Is(err, ErrNoLibrary) {
			t.Errorf("error %q matches ErrNoLibrary; the build, not the library, is missing", err)
		}
		if !strings.Contains(err.Error(), "cgo") && !strings.Contains(err.Error(), "Linux-only") {
			t.Errorf("error %q does not say why verbs are unavailable", err)
		}
		return
	}
	t.Logf("case: cgo build, library missing: %v", err)
	if !errors.Is(err, ErrNoLibrary) {
		t.Errorf("error %q does not match ErrNoLibrary", err)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("error %q does not name the library", err)
	}
}

func TestOpenHere(t *testing.T) {
	lib, err := Open()
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Open: %v; want an error matching ErrUnavailable", err)
		}
		if haveVerbs {
			if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), LibraryName) {
				t.Fatalf("Open: %v; want ErrNoLibrary naming %s", err, LibraryName)
			}
			t.Logf("case: no libibverbs on this machine: %v", err)
		} else {
			t.Logf("case: built without libibverbs support: %v", err)
		}
		return
	}
	if !haveVerbs {
		t.Fatal("Open succeeded in a build without libibverbs support")
	}
	devs, err := lib.Devices()
	if err != nil {
		if !errors.Is(err, ErrNoDevice) || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Devices: %v; want an error matching ErrNoDevice and ErrUnavailable", err)
		}
		for _, hint := range []string{"ibv_devices", "/sys/class/infiniband"} {
			if !strings.Contains(err.Error(), hint) {
				t.Errorf("Devices: %q does not mention %s", err, hint)
			}
		}
		t.Logf("case: libibverbs loaded, no device: %v", err)
		for _, name := range []string{"", "mlx5_0"} {
			ctx, err := lib.OpenDevice(name)
			if ctx != nil || !errors.Is(err, ErrNoDevice) {
				t.Errorf("OpenDevice(%q) = %v, %v; want ErrNoDevice", name, ctx, err)
			}
		}
		return
	}
	t.Logf("case: libibverbs loaded, devices %v", devs)
	ctx, err := lib.OpenDevice("gocomms-no-such-device")
	if ctx != nil || !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), devs[0].Name) {
		t.Errorf("OpenDevice(unknown) = %v, %v; want ErrNoDevice listing %s", ctx, err, devs[0].Name)
	}
}

// Objects not made by this package, or nil, fail with an error rather
// than reach the library.
func TestZeroValues(t *testing.T) {
	var (
		nilLib *Library
		nilCtx *Context
		nilPD  *PD
		nilMR  *MR
		nilCQ  *CQ
		nilQP  *QP
	)
	must := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", what, err)
		}
	}
	_, err := nilLib.Devices()
	must("nil Library Devices", err)
	_, err = (&Library{}).OpenDevice("")
	must("zero Library OpenDevice", err)
	for name, c := range map[string]*Context{"nil": nilCtx, "zero": {}} {
		_, err = c.AllocPD()
		must(name+" Context AllocPD", err)
		_, err = c.CreateCQ(16)
		must(name+" Context CreateCQ", err)
		_, err = c.CreateQP(nil, nil, nil, QPCaps{})
		must(name+" Context CreateQP", err)
		_, err = c.QueryPort(1)
		must(name+" Context QueryPort", err)
		_, err = c.QueryGID(1, 0)
		must(name+" Context QueryGID", err)
		if err := c.Close(); err != nil {
			t.Errorf("%s Context Close: %v", name, err)
		}
	}
	_, err = nilPD.RegMR(make([]byte, 8), AccessLocalWrite)
	must("nil PD RegMR", err)
	_, err = nilMR.SGE(0, 1)
	must("nil MR SGE", err)
	_, err = nilMR.Remote(0)
	must("nil MR Remote", err)
	_, err = (&CQ{}).Poll(make([]Completion, 4))
	must("zero CQ Poll", err)
	_, err = nilCQ.Poll(nil)
	must("nil CQ Poll", err)
	for name, q := range map[string]*QP{"nil": nilQP, "zero": {}} {
		must(name+" QP PostWrite", q.PostWrite(1, SGE{}, Remote{}, Signaled))
		must(name+" QP PostRecv", q.PostRecv(1, SGE{}))
		must(name+" QP PostFetchAdd", q.PostFetchAdd(1, SGE{Length: 8}, Remote{}, 1, 0))
		must(name+" QP Connect", q.Connect(Endpoint{}, Endpoint{}))
		_, err = q.Endpoint(1, 0, 0)
		must(name+" QP Endpoint", err)
	}
	for name, closer := range map[string]interface{ Close() error }{
		"PD": nilPD, "MR": nilMR, "CQ": nilCQ, "QP": nilQP,
		"zero PD": &PD{}, "zero MR": &MR{}, "zero CQ": &CQ{}, "zero QP": &QP{},
	} {
		if err := closer.Close(); err != nil {
			t.Errorf("%s Close: %v", name, err)
		}
	}
	if nilMR.Addr() != 0 || nilMR.Len() != 0 || nilMR.LKey() != 0 || nilMR.RKey() != 0 ||
		nilMR.Bytes() != nil || nilCQ.Depth() != 0 || nilQP.QPN() != 0 || nilQP.Caps() != (QPCaps{}) ||
		nilCtx.Name() != "" || nilCtx.Attr() != (DeviceAttr{}) {
		t.Error("accessors of nil objects return non-zero values")
	}
}

func TestCompletionErr(t *testing.T) {
	if err := (Completion{Status: StatusSuccess}).Err(); err != nil {
		t.Fatalf("successful completion: Err() = %v", err)
	}
	err := Completion{WRID: 7, QPN: 0x11, Status: StatusRemAccessErr, VendorErr: 0x88}.Err()
	var ce *CompletionError
	if !errors.Is(err, ErrCompletion) || !errors.As(err, &ce) {
		t.Fatalf("Err() = %v; want a *CompletionError matching ErrCompletion", err)
	}
	if ce.WRID != 7 || ce.Status != StatusRemAccessErr || ce.VendorErr != 0x88 {
		t.Errorf("CompletionError = %+v", ce)
	}
	for _, want := range []string{"0x7", "REM_ACCESS_ERR", "0x88", "0x11"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
	withText := &CompletionError{WRID: 1, Status: StatusRetryExcErr, Text: "transport retry counter exceeded"}
	if !strings.Contains(withText.Error(), "transport retry counter exceeded") {
		t.Errorf("%q does not carry the library's text", withText)
	}
}

func TestOpError(t *testing.T) {
	err := error(&OpError{Op: "post write", Device: "mlx5_0", Err: syscall.ENOMEM})
	if !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("%v does not match ENOMEM", err)
	}
	if got, want := err.Error(), "rdma/verbs: mlx5_0: post write: cannot allocate memory"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(ErrNoLibrary, ErrUnavailable) || !errors.Is(ErrNoDevice, ErrUnavailable) {
		t.Error("ErrNoLibrary and ErrNoDevice must match ErrUnavailable")
	}
	if errors.Is(ErrNoDevice, ErrNoLibrary) || errors.Is(ErrNoLibrary, ErrNoDevice) {
		t.Error("ErrNoLibrary and ErrNoDevice must be told apart")
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct {
		v    interface{ String() string }
		want string
	}{
		{StatusSuccess, "SUCCESS"},
		{StatusWRFlushErr, "WR_FLUSH_ERR"},
		{StatusTMRndvIncomplete, "TM_RNDV_INCOMPLETE"},
		{Status(99), "Status(99)"},
		{OpWrite, "write"},
		{OpRecvWriteImm, "recv-write-imm"},
		{Opcode(77), "Opcode(77)"},
		{MTU1024, "1024"},
		{MTU4096, "4096"},
		{MTU(0), "MTU(0)"},
		{AccessLocalWrite | AccessRemoteRead, "LocalWrite|RemoteRead"},
		{AccessRelaxedOrdering, "RelaxedOrdering"},
		{Access(1 << 9), "1<<9"},
		{Signaled | Inline, "Signaled|Inline"},
		{SendFlags(0), "0"},
		{PortActive, "ACTIVE"},
		{LinkEthernet, "Ethernet"},
		{AtomicHCA, "HCA"},
		{GID{0xfe, 0x80, 15: 1}, "fe80::1"},
		{GID{10: 0xff, 11: 0xff, 12: 10, 13: 0, 14: 0, 15: 7}, "::ffff:10.0.0.7"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("%T(%#v).String() = %q, want %q", tc.v, tc.v, got, tc.want)
		}
	}
	if !OpRecv.IsRecv() || !OpRecvWriteImm.IsRecv() || OpRead.IsRecv() {
		t.Error("IsRecv misclassifies")
	}
	if len(statusNames) != int(StatusTMRndvIncomplete)+1 {
		t.Errorf("statusNames has %d names for %d statuses", len(statusNames), StatusTMRndvIncomplete+1)
	}
}
