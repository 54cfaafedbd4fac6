package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/simulation"
)

// TestSim: a clean run completes on every rank; a crash is reported
// grouped, naming the crashed rank; a sweep passes; bad flags are usage
// errors.
func TestSim(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"sim", "--ranks", "6", "--nodes", "2", "--bytes", "64KiB", "--json"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	var rep simReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Outcomes) != 1 || rep.Outcomes[0] != "0-5: completed 1" || rep.SimTimeUS <= 0 || rep.BusBW <= 0 {
		t.Errorf("clean run: %+v", rep)
	}

	out.Reset()
	if code := run([]string{"sim", "--ranks", "8", "--bytes", "1M", "--iters", "3", "--faults", "crash:rank=5,at=5us"}, &out, &errs); code != 0 {
		t.Fatalf("crash run: exit %d: %s", code, out.String())
	}
	for _, want := range []string{"5: crashed", "0-4,6-7: failed: peer failed, naming ranks [5]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("crash run output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if code := run([]string{"sim", "--ranks", "5", "--bytes", "4K", "--jitter", "1us", "--seeds", "20"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "20 seeds, 0 failing") {
		t.Errorf("sweep: exit %d: %s", code, out.String())
	}

	for _, bad := range [][]string{{"--op", "all"}, {"--ranks", "5", "--nodes", "2"}, {"--faults", "melt:rank=1"}, {"--bytes", "lots"}, {"--topology", "torus"}} {
		if code := run(append([]string{"sim"}, bad...), &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

// simWrites runs commnode sim on ranks ranks, with flag naming a file,
// and returns what the run wrote there; a sweep (--seeds) must refuse the
// flag, since it records one run.
func simWrites(t *testing.T, flag string, ranks int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out")
	var out, errs bytes.Buffer
	if code := run([]string{"sim", "--ranks", strconv.Itoa(ranks), "--bytes", "64K", flag, path}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"sim", "--ranks", "4", "--seeds", "2", flag, path}, &out, &errs); code != 2 {
		t.Errorf("%s with --seeds: exit %d, want 2", flag, code)
	}
	return b
}

// TestSimTrace: --trace writes the run's timeline as a Chrome trace, one
// operation span per rank; a sweep refuses it.
func TestSimTrace(t *testing.T) {
	b := simWrites(t, "--trace", 4)
	var doc struct {
		TraceEvents []struct {
			Cat string `json:"cat"`
			Pid int    `json:"pid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	spans := map[int]int{}
	for _, e := range doc.TraceEvents {
		if e.Cat == "op" {
			spans[e.Pid]++
		}
	}
	if len(spans) != 4 || spans[0] != 1 || spans[3] != 1 {
		t.Errorf("operation spans by rank: %v, want one on each of 4", spans)
	}
}

// TestSimMemProfile: --memprofile writes a heap profile taken once the
// run is over, while the ranks are still held: their links are in it; a
// sweep refuses it.
func TestSimMemProfile(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1 // every allocation: a small run's links would fall between samples
	z, err := gzip.NewReader(bytes.NewReader(simWrites(t, "--memprofile", 64)))
	if err != nil {
		t.Fatalf("the profile is not gzipped: %v", err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	// A profile's string table holds its sample types and the functions
	// of its stacks, uncompressed.
	for _, want := range []string{"inuse_space", "actors/link.Producer"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the heap profile has no %q", want)
		}
	}
}

// TestSimRegressions replays every run of testdata/sim-regressions.txt:
// each keeps the invariants now, and twice gives one trace.
func TestSimRegressions(t *testing.T) {
	b, err := os.ReadFile("testdata/sim-regressions.txt")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args := strings.Fields(strings.TrimPrefix(line, "commnode "))
		for i, a := range args {
			if uq, err := strconv.Unquote(a); err == nil {
				args[i] = uq
			}
		}
		var hashes []string
		for range 2 {
			var out, errs bytes.Buffer
			if code := run(append(args, "--json"), &out, &errs); code != 0 {
				t.Fatalf("%s: exit %d: %s%s", line, code, out.String(), errs.String())
			}
			var rep simReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, rep.TraceHash)
		}
		if hashes[0] != hashes[1] {
			t.Errorf("%s: traces %v", line, hashes)
		}
	}
}

// TestSimRefusesWhatWillNotFit: a run whose estimate of live heap is over
// the limit is refused before any rank is built, saying its estimate and
// the most ranks of its shape that fit; --force runs it anyway, saying
// the estimate first.
func TestSimRefusesWhatWillNotFit(t *testing.T) {
	f := simFlags{ranks: 4096, nodes: 512, op: "all_reduce", bytes: "1MiB", dtype: "float32", algo: "rabenseifner",
		topology: "dgx-h100", data: "phantom", iters: 1, timeout: time.Second, limit: time.Minute}
	cfg, _, _, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	est, err := cfg.Estimate()
	if err != nil {
		t.Fatal(err)
	}
	var errs bytes.Buffer
	if !fits(&cfg, 1, est.Bytes, false, &errs) || errs.Len() != 0 {
		t.Errorf("a run of a small estimate, at its limit: refused, or said %q", errs.String())
	}
	rel := cfg
	rel.ReleaseLinks = true
	released, err := rel.Estimate()
	if err != nil || released.Bytes >= est.Bytes {
		t.Fatalf("links released: %+v, %v, against %+v kept", released, err, est)
	}
	// Over the limit with links kept, under it with links released: the
	// run releases them, and says so.
	limit := released.Bytes
	run := cfg
	if !fits(&run, 1, limit, false, &errs) || !run.ReleaseLinks || !strings.Contains(errs.String(), "links     released as the schedules leave their peers (--release-links): kept, 4096 ranks of rabenseifner") {
		t.Fatalf("a run that fits with links released: refused, kept its links, or said %q", errs.String())
	}
	errs.Reset()
	limit = released.Bytes / 2
	if fits(&cfg, 1, limit, false, &errs) {
		t.Fatal("a run estimated at twice the limit, links released, was not refused")
	}
	m := regexp.MustCompile(`refused: 4096 ranks of rabenseifner, .* need about [0-9.]+ GiB of live heap, or [0-9.]+ GiB with links released .*, over the [0-9.]+ GiB limit .* at most (\d+) ranks of this shape fit\. --force runs it anyway`).FindStringSubmatch(errs.String())
	if m == nil {
		t.Fatalf("the refusal says %q", errs.String())
	}
	most, _ := strconv.Atoi(m[1])
	if most <= 0 || most >= cfg.Ranks || most%8 != 0 {
		t.Errorf("at most %d ranks fit, of 4096 at 8 a node", most)
	}
	errs.Reset()
	if !fits(&cfg, 1, limit, true, &errs) || !strings.Contains(errs.String(), "estimate  ") {
		t.Errorf("--force: refused, or said %q", errs.String())
	}
	// A sweep runs a run per CPU at once: four that each fit half the
	// limit do not fit it together.
	errs.Reset()
	if fits(&cfg, 4, 2*released.Bytes, false, &errs) || !strings.Contains(errs.String(), "refused: 4 runs at once of 4096 ranks") {
		t.Errorf("four runs of half the limit each: not refused, or said %q", errs.String())
	}
}

// TestHugePagesHint: a large run hears how to have its heap in huge
// pages where the kernel's mode gives it none, and nothing where it does
// or the mode is unknown.
func TestHugePagesHint(t *testing.T) {
	for setting, mode := range map[string]string{
		"always [madvise] never\n": "madvise",
		"[always] madvise never\n": "always",
		"always madvise [never]":   "never",
		"always madvise never":     "",
		"[always":                  "",
		"":                         "",
	} {
		if got := thpMode(setting); got != mode {
			t.Errorf("thpMode(%q) = %q, want %q", setting, got, mode)
		}
		hint := hugePagesHint(mode)
		if want := mode == "madvise" || mode == "never"; want != (hint != "") ||
			want && !strings.Contains(hint, `"`+mode+`"`) || want && !strings.Contains(hint, "`always` in "+thpSetting) {
			t.Errorf("mode %q: the hint is %q", mode, hint)
		}
	}
}

// TestSimTopologyFile: --topology FILE.json runs on a fit that
// bench/calibrate.sh --fit wrote, the same as the preset it copies, and
// a file that is no fit is a usage error.
func TestSimTopologyFile(t *testing.T) {
	fit, err := json.Marshal(simulation.HostFits()["shm"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "shm.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, fit, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"name": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	times := map[string]float64{}
	for _, topo := range []string{"shm", good} {
		var out, errs bytes.Buffer
		if code := run([]string{"sim", "--ranks", "4", "--topology", topo, "--bytes", "64KiB", "--json"}, &out, &errs); code != 0 {
			t.Fatalf("--topology %s: exit %d: %s%s", topo, code, out.String(), errs.String())
		}
		var rep simReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		times[topo] = rep.SimTimeUS
	}
	if times["shm"] <= 0 || times["shm"] != times[good] {
		t.Errorf("the shm preset simulates %v µs, its fit from a file %v", times["shm"], times[good])
	}
	var out, errs bytes.Buffer
	if code := run([]string{"sim", "--ranks", "4", "--topology", bad}, &out, &errs); code != 2 {
		t.Errorf("--topology of a file that is no fit: exit %d, want 2", code)
	}
}
