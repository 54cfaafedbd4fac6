package fakecuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/gocomms/gocomms/internal/ccompiler"
)

// Library is the file name Build writes, the one gpu/cuda loads.
const Library = "libcuda.so.1"

// ErrUnsupported reports a machine where the fake cannot be built: not
// Linux, cgo off, or no C compiler. Tests skip on it; any other error of
// Build is a failure.
var ErrUnsupported = errors.New("fakecuda: cannot build the fake driver here")

var built struct {
	once sync.Once
	dir  string
	err  error
}

// Build compiles fakecuda.c once per process into a directory it
// returns, holding Library. It fails where cgo is off, the system is not
// Linux, or there is no C compiler ($CC, or cc), with an error that
// matches ErrUnsupported.
func Build() (string, error) {
	built.once.Do(func() { built.dir, built.err = build() })
	return built.dir, built.err
}

// BuildFor is Build for a test: it skips t where the fake cannot be
// built here (ErrUnsupported), and fails it on any other error.
func BuildFor(t testing.TB) string {
	t.Helper()
	dir, err := Build()
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("skip: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func build() (string, error) {
	if runtime.GOOS != "linux" || os.Getenv("CGO_ENABLED") == "0" {
		return "", fmt.Errorf("%w: it needs Linux and cgo", ErrUnsupported)
	}
	cc, err := ccompiler.Find()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("fakecuda: cannot find fakecuda.c")
	}
	dir, err := os.MkdirTemp("", "fakecuda")
	if err != nil {
		return "", err
	}
	src := filepath.Join(filepath.Dir(self), "testdata", "fakecuda.c")
	cmd := exec.Command(cc, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
		"-o", filepath.Join(dir, Library), src, "-lpthread")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fakecuda: building %s: %v\n%s", src, err, out)
	}
	return dir, nil
}

// Env returns the environment variables that make a process started with
// them load the fake built in dir, with the given number of devices, a
// wait for a value in device memory that says every waitMS milliseconds
// which word it still waits for (it never gives up, as a GPU does not),
// and GOCOMMS_CUDA_REQUIRE set or cleared.
func Env(dir string, devices, waitMS int, require bool) []string {
	req := ""
	if require {
		req = "1"
	}
	return []string{
		"LD_LIBRARY_PATH=" + dir,
		fmt.Sprintf("GOCOMMS_FAKECUDA_DEVICES=%d", devices),
		fmt.Sprintf("GOCOMMS_FAKECUDA_WAIT_MS=%d", waitMS),
		"GOCOMMS_CUDA_REQUIRE=" + req,
	}
}

// CallsVar names the file where a process with the fake driver counts
// the driver calls it makes, once set in its environment: three 8-byte
// words, in the host's order, which Calls reads while it runs. Processes
// that share the file add to it.
const CallsVar = "GOCOMMS_FAKECUDA_CALLS"

// Count is what the fake driver counted.
type Count struct {
	// Calls counts the driver calls the others do not: those that queue
	// work, synchronize, allocate or ask for a property.
	Calls uint64
	// ContextSets counts cuCtxSetCurrent, which each package call makes
	// first, and cuCtxGetCurrent: the driver only stores or reads the
	// context in the calling thread's state.
	ContextSets uint64
	// Queries counts cuEventQuery and cuStreamQuery, which a thread that
	// waits for the device polls: as many as its wait lasts.
	Queries uint64
}

// Calls returns the driver calls counted in the file CallsVar names.
func Calls(path string) (Count, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Count{}, err
	}
	if len(b) != 24 {
		return Count{}, fmt.Errorf("fakecuda: %s holds %d bytes, not three counts of 8", path, len(b))
	}
	word := func(i int) uint64 { return binary.NativeEndian.Uint64(b[8*i:]) }
	return Count{Calls: word(0), ContextSets: word(1), Queries: word(2)}, nil
}

// Sub returns the calls counted since before.
func (c Count) Sub(before Count) Count {
	return Count{Calls: c.Calls - before.Calls, ContextSets: c.ContextSets - before.ContextSets,
		Queries: c.Queries - before.Queries}
}
