package rdma

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/internal/ccompiler"
	"github.com/gocomms/gocomms/rdma/verbs"
)

// The tests of this package that do not depend on a provider run over
// the verbs provider too: TestVerbsFake runs them in a child process
// against testdata/fakeverbs.c of package verbs, a stand-in libibverbs
// whose queue pairs move data with memcpy inside the process, and
// TestVerbsDevice against the machine's RDMA device, where it has one.
// The child is this test binary, with GOCOMMS_RDMA_TEST_PROVIDER=verbs
// making "verbs" every New's default provider.
//
// GOCOMMS_RDMA_DEVICE, GOCOMMS_RDMA_PORT and GOCOMMS_RDMA_GID_INDEX pick
// the device, as for package verbs' tests; GOCOMMS_RDMA_REQUIRE=1 turns
// skips for want of a device into failures.
const (
	providerEnv = "GOCOMMS_RDMA_TEST_PROVIDER"
	requireEnv  = "GOCOMMS_RDMA_REQUIRE"
	noLibEnv    = "GOCOMMS_RDMA_TEST_HIDDEN_LIBRARY"
)

// verbsSuite are the tests run over the verbs provider: the package's
// tests that take any provider, and the verbs provider's own.
var verbsSuite = []string{
	"TestWriteReadBothWays", "TestOffsets", "TestHandlesRoundTrip", "TestNotify", "TestAtomics",
	"TestRefusedBeforeAnythingMoves", "TestDeregister", "TestZeroLength", "TestPipelined", "TestModel",
	"TestWaitForWriteTimeout", "TestPeerCloses", "TestAdvertise", "Example",
	"TestVerbsDataPath", "TestVerbsChunks", "TestVerbsNotifications", "TestVerbsConnect", "TestVerbsOneWay",
	"TestVerbsAbandoned", "TestVerbsContextBeforeSending", "TestVerbsClosePending",
	"TestVerbsCompletionError", "TestVerbsDeregister", "TestVerbsSharedRegistration",
	"TestVerbsSideChannel",
}

func init() {
	p := os.Getenv(providerEnv)
	if p == "" {
		return
	}
	port, gid := 1, -1
	var err error
	if s := os.Getenv("GOCOMMS_RDMA_PORT"); s != "" {
		if port, err = strconv.Atoi(s); err != nil || port < 1 || port > 255 {
			panic(fmt.Sprintf("GOCOMMS_RDMA_PORT=%q: want 1 to 255", s))
		}
	}
	if s := os.Getenv("GOCOMMS_RDMA_GID_INDEX"); s != "" {
		if gid, err = strconv.Atoi(s); err != nil {
			panic(fmt.Sprintf("GOCOMMS_RDMA_GID_INDEX=%q: %v", s, err))
		}
	}
	device := os.Getenv("GOCOMMS_RDMA_DEVICE")
	testDefaults = func(c *config) {
		c.provider = p
		WithVerbsDevice(device, uint8(port), gid)(c)
	}
}

// needVerbs skips t, saying why, unless verbs transports can be made
// here; under GOCOMMS_RDMA_REQUIRE=1 it fails it instead.
func needVerbs(t testing.TB) {
	t.Helper()
	if err := Supported("verbs"); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s=1, but %v", requireEnv, err)
		}
		t.Skipf("skip: %v (TestVerbsFake runs this test against a stand-in library)", err)
	}
}

// verbsPair returns two verbs transports, bound and connected to each
// other, closed when the test ends.
func verbsPair(t testing.TB) (a, b *Transport) {
	t.Helper()
	needVerbs(t)
	return newPair(t, WithProvider("verbs"))
}

func verbsEP(tr *Transport) *verbsEndpoint { return tr.ep.(*verbsEndpoint) }

// TestVerbsFake runs verbsSuite against fakeverbs, built here with the C
// compiler and found ahead of any real libibverbs through
// LD_LIBRARY_PATH.
func TestVerbsFake(t *testing.T) {
	if os.Getenv(providerEnv) != "" {
		t.Skip("skip: this is the child process")
	}
	if !verbsLoadable {
		t.Skip("skip: this build cannot load libibverbs at all (no cgo, or not Linux)")
	}
	dir := t.TempDir()
	buildFakeVerbs(t, dir)
	runVerbsSuite(t, verbsSuite, "LD_LIBRARY_PATH="+dir, "GOCOMMS_RDMA_DEVICE=fake0", "GOCOMMS_RDMA_PORT=",
		"GOCOMMS_RDMA_GID_INDEX=")
}

// TestVerbsDevice runs verbsSuite against this machine's RDMA device, and
// TestPeerKilled, whose peer is another process: the fake's queue pairs
// reach only those of their own process.
func TestVerbsDevice(t *testing.T) {
	if os.Getenv(providerEnv) != "" {
		t.Skip("skip: this is the child process")
	}
	needVerbs(t)
	runVerbsSuite(t, append(slices.Clone(verbsSuite), "TestPeerKilled"))
}

// runVerbsSuite runs the tests named in a child process with env added,
// and checks that each passed there.
func runVerbsSuite(t *testing.T, suite []string, env ...string) {
	args := []string{"-test.run=^(" + strings.Join(suite, "|") + ")$", "-test.count=1",
		"-test.timeout=120s", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), append([]string{providerEnv + "=verbs", requireEnv + "=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || testing.Verbose() {
		t.Logf("the suite over the verbs provider:\n%s", out)
	}
	if err != nil {
		t.Fatalf("the suite over the verbs provider: %v", err)
	}
	passed := regexp.MustCompile(`(?m)^--- PASS: (\S+)`).FindAllStringSubmatch(string(out), -1)
	for _, name := range suite {
		if !slices.ContainsFunc(passed, func(m []string) bool { return m[1] == name }) {
			t.Errorf("%s did not pass over the verbs provider", name)
		}
	}
}

// buildFakeVerbs builds package verbs' fakeverbs.c as dir/libibverbs.so.1,
// or skips t if there is no C compiler or no rdma-core header.
func buildFakeVerbs(t *testing.T, dir string) {
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
	build := exec.Command(cc, "-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC",
		"-o", filepath.Join(dir, verbs.LibraryName), filepath.Join("verbs", "testdata", "fakeverbs.c"), "-lpthread")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building verbs/testdata/fakeverbs.c: %v\n%s", err, out)
	}
}

// TestVerbsUnavailable checks that where verbs cannot be used, the
// provider says so, and why, rather than crash: here as it is, and in a
// child process whose libibverbs is hidden behind a file that is not a
// library.
func TestVerbsUnavailable(t *testing.T) {
	if !slices.Contains(Providers(), "verbs") {
		t.Fatalf("Providers() = %v, without verbs", Providers())
	}
	if os.Getenv(noLibEnv) == "1" {
		checkUnavailable(t, verbs.ErrNoLibrary)
		return
	}
	if err := Supported("verbs"); err == nil {
		t.Log("case: verbs transports can be made here")
	} else {
		checkUnavailable(t, nil)
	}
	if !verbsLoadable {
		return // nothing to hide
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, verbs.LibraryName), []byte("not a library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestVerbsUnavailable$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir, noLibEnv+"=1", providerEnv+"=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestVerbsUnavailable") {
		t.Fatalf("with libibverbs hidden: %v\n%s", err, out)
	}
	t.Logf("with libibverbs hidden:\n%s", out)
}

// checkUnavailable checks that Supported and New refuse the verbs
// provider with errors that match ErrUnsupported, verbs' ErrUnavailable,
// and want where it is not nil.
func checkUnavailable(t *testing.T, want error) {
	t.Helper()
	err := Supported("verbs")
	tr, newErr := New(WithProvider("verbs"))
	if tr != nil {
		tr.Close()
		t.Fatal("New made a verbs transport where Supported refuses the provider")
	}
	for what, err := range map[string]error{"Supported": err, "New": newErr} {
		if !errors.Is(err, ErrUnsupported) || !errors.Is(err, verbs.ErrUnavailable) ||
			want != nil && !errors.Is(err, want) {
			t.Errorf("%s: %v; want an error matching ErrUnsupported, verbs.ErrUnavailable and %v", what, err, want)
		}
		if !strings.Contains(fmt.Sprint(err), "rdma/verbs:") {
			t.Errorf("%s: %q does not carry package verbs' reason", what, err)
		}
	}
	t.Logf("case: verbs unavailable: %v", err)
}
