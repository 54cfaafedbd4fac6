package verbs

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/internal/ccompiler"
)

// TestABI builds testdata/abicheck.c against rdma-core's own header and
// runs it: the layouts ibv.h declares must be the header's, and the C
// helpers must fill the real structures as the verbs expect. It needs a C
// compiler and libibverbs' development header (libibverbs-dev,
// rdma-core-devel); it does not need cgo, the library, or a device.
func TestABI(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("skip: libibverbs' ABI is Linux's, this is %s", runtime.GOOS)
	}
	cc := compilerWithVerbsHeader(t)
	bin := filepath.Join(t.TempDir(), "abicheck")
	build := exec.Command(cc, "-std=c11", "-Wall", "-Wno-unused-function", "-Werror",
		"-I", filepath.Join("..", "..", "internal", "dlib"), "-o", bin, filepath.Join("testdata", "abicheck.c"), "-ldl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/abicheck.c: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	t.Logf("abicheck:\n%s", out)
	if err != nil {
		t.Fatalf("abicheck: %v", err)
	}
}

// TestFakeProvider runs the device tests against testdata/fakeverbs.c, a
// stand-in libibverbs.so.1 whose one device moves data by memcpy, found
// ahead of the real library through LD_LIBRARY_PATH. It exercises every
// call this package makes, and the structures it builds, where there is
// no device; what a real device does differently (timing, retries, byte
// order of atomics) only a real device shows.
func TestFakeProvider(t *testing.T) {
	if !haveVerbs {
		t.Skip("skip: this build cannot load libibverbs at all (no cgo, or not Linux)")
	}
	cc := compilerWithVerbsHeader(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, LibraryName)
	build := exec.Command(cc, "-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC",
		"-o", lib, filepath.Join("testdata", "fakeverbs.c"), "-lpthread")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/fakeverbs.c: %v\n%s", err, out)
	}
	run := exec.Command(os.Args[0], "-test.run=^TestLoopback", "-test.v", "-test.count=1",
		"-test.timeout=120s")
	run.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir, "GOCOMMS_RDMA_REQUIRE=1",
		"GOCOMMS_RDMA_DEVICE=fake0", "GOCOMMS_RDMA_PORT=", "GOCOMMS_RDMA_GID_INDEX=")
	out, err := run.CombinedOutput()
	t.Logf("device tests against fakeverbs:\n%s", out)
	if err != nil {
		t.Fatalf("device tests against fakeverbs: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestLoopbackDataPath") {
		t.Fatal("TestLoopbackDataPath did not pass against fakeverbs")
	}
}

// compilerWithVerbsHeader returns the C compiler ($CC, or cc) if it finds
// rdma-core's header, and skips the test, saying which is missing, if not.
func compilerWithVerbsHeader(t *testing.T) string {
	t.Helper()
	cc, err := ccompiler.Find()
	if err != nil {
		t.Skipf("skip: %v", err)
	}
	probe := exec.Command(cc, "-E", "-x", "c", "-")
	probe.Stdin = strings.NewReader("#include <infiniband/verbs.h>\n")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("skip: <infiniband/verbs.h> not installed (libibverbs-dev): %v: %.200s", err, out)
	}
	return cc
}
