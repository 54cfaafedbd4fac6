package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/cmd/commnode/internal/bench"
)

// benchRows runs commnode bench with args, expecting exit 0, and returns
// the table's rows split into columns, and stdout.
func benchRows(t *testing.T, args ...string) ([][]string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := benchCommand(args, &out, &errb); code != 0 {
		t.Fatalf("bench %q exited %d: %s\n%s", args, code, errb.String(), out.String())
	}
	var rows [][]string
	for line := range strings.Lines(out.String()) {
		if !strings.HasPrefix(line, "#") {
			rows = append(rows, strings.Fields(line))
		}
	}
	return rows, out.String()
}

func TestBenchTable(t *testing.T) {
	for _, ranks := range []string{"2", "3"} {
		rows, out := benchRows(t, "-local", ranks, "-b", "8", "-e", "64K", "-c", "1", "-n", "5", "-w", "1")
		for _, want := range []string{
			"# gocomms bench: gocomms ", ", " + ranks + " ranks, rank 0 on host ",
			"#       size         count      type   redop    root     time   algbw   busbw #wrong\n",
			"# Out of bounds values : 0 OK\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s ranks: no %q in\n%s", ranks, want, out)
			}
		}
		if len(rows) != 14 { // 8 B to 64 KiB, doubling
			t.Fatalf("%s ranks: %d rows, want 14:\n%s", ranks, len(rows), out)
		}
		p, _ := strconv.ParseFloat(ranks, 64)
		for i, cols := range rows {
			size := int64(8) << i
			want := []string{strconv.FormatInt(size, 10), strconv.FormatInt(size/4, 10), "float32", "sum", "-1"}
			if len(cols) != 9 || !equal(cols[:5], want) || cols[8] != "0" {
				t.Errorf("%s ranks: row %q, want %q then time, algbw, busbw and 0 wrong", ranks, cols, want)
				continue
			}
			tm, algbw, busbw := number(t, cols[5]), number(t, cols[6]), number(t, cols[7])
			if tm <= 0 || algbw < 0 || busbw < algbw {
				t.Errorf("%s ranks: row %q: time, algbw or busbw out of range", ranks, cols)
			}
			// Rounded to 2 decimals, busbw is algbw × 2(p-1)/p give or take.
			if f := 2 * (p - 1) / p; busbw > algbw*f+0.011 || busbw < algbw*f-0.011 {
				t.Errorf("%s ranks: row %q: busbw is not %.3f × algbw", ranks, cols, f)
			}
		}
	}
}

func equal(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func number(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBenchJSON(t *testing.T) {
	_, out := benchRows(t, "-local", "3", "--op", "all_gather", "--dtype", "bfloat16", "-b", "1K", "-e", "4K", "-n", "2", "-w", "0", "--json")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one per size (1K, 2K, 4K):\n%s", len(lines), out)
	}
	for i, line := range lines {
		var r struct {
			Op      string  `json:"op"`
			Ranks   int     `json:"ranks"`
			Size    int64   `json:"size"`
			Count   int64   `json:"count"`
			Type    string  `json:"type"`
			TimeUS  float64 `json:"time_us"`
			Checked bool    `json:"checked"`
			Wrong   *int64  `json:"wrong"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		// all_gather: each of 3 ranks holds a third of the elements.
		count := int64(512<<i) / 3
		if r.Op != "all_gather" || r.Ranks != 3 || r.Size != count*3*2 || r.Count != count || r.Type != "bfloat16" ||
			r.TimeUS <= 0 || !r.Checked || r.Wrong == nil || *r.Wrong != 0 {
			t.Errorf("line %q", line)
		}
	}
}

func TestBenchEveryOp(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-local", "2", "--op", "all", "--dtype", "int32", "--redop", "bxor", "--root", "1", "-b", "4", "-e", "1K", "-f", "16", "-n", "2", "-w", "1"}
	if code := benchCommand(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, op := range []string{"all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter", "barrier", "send_recv"} {
		if !strings.Contains(out.String(), "#\n# "+op+"\n") {
			t.Errorf("no %s table in\n%s", op, out.String())
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-bogus"},
		{"-local", "2", "extra"},
		{"-local", "-1"},
		{"-local", "2", "-b", "1X"},
		{"-local", "2", "-b", "0"},
		{"-local", "2", "-b", "1M", "-e", "1K"},
		{"-local", "2", "-f", "1"},
		{"-local", "2", "-n", "0"},
		{"-local", "2", "-w", "-1"},
		{"-local", "2", "-c", "2"},
		{"-local", "2", "--op", "allreduced"},
		{"-local", "2", "--dtype", "float128"},
		{"-local", "2", "--redop", "product"},
		{"-local", "2", "--redop", "band"}, // not defined for float32
		{"-local", "2", "--algo", "pairwise"},
		{"-local", "2", "--op", "broadcast", "--root", "2"},
		{"-local", "1", "--op", "send_recv"},
	} {
		var out, errb bytes.Buffer
		if code := benchCommand(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: commnode bench") {
			t.Errorf("bench %q: exit %d, stderr %q", args, code, errb.String())
		}
		if out.Len() > 0 {
			t.Errorf("bench %q printed %q", args, out.String())
		}
	}
}

// TestBenchJoinsTheJob runs one rank of a one-rank job from the
// environment, as a launcher would start it.
func TestBenchJoinsTheJob(t *testing.T) {
	t.Setenv("RANK", "0")
	t.Setenv("WORLD_SIZE", "1")
	rows, _ := benchRows(t, "-b", "8", "-e", "32", "-n", "1", "-w", "0")
	if len(rows) != 3 {
		t.Errorf("rows %q, want 3", rows)
	}
	var out, errb bytes.Buffer
	if code := benchCommand([]string{"--op", "scatter", "--root", "1"}, &out, &errb); code != 2 {
		t.Errorf("root 1 of a one-rank job: exit %d, stderr %q", code, errb.String())
	}
}

// TestBenchEveryAlgorithm runs --algo all over every op: a table per op
// and schedule, each row checked, and the fastest schedule of each op and
// size named once among that op's schedules.
func TestBenchEveryAlgorithm(t *testing.T) {
	rows, out := benchRows(t, "-local", "3", "--op", "all", "--algo", "all", "-b", "64", "-e", "4K", "-f", "64", "-n", "1", "-w", "0")
	for _, want := range []string{"algo: all", "# Out of bounds values : 0 OK\n", "# fastest schedule per size\n", "# est: each schedule run on an alpha-beta model: 15 us latency, 80 us sender overhead a message, 1 GB/s a port\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, op := range []bench.Op{bench.Op(algorithms.AllReduce), bench.Op(algorithms.Broadcast), bench.Op(algorithms.AllToAll), bench.Op(algorithms.Barrier)} {
		for _, algo := range op.Algorithms() {
			if !strings.Contains(out, fmt.Sprintf("#\n# %v by %s\n", op, algo)) {
				t.Errorf("no %v table by %s", op, algo)
			}
		}
	}
	fastest := 0
	_, tuning, _ := strings.Cut(out, "# fastest schedule per size\n")
	for line := range strings.Lines(tuning) {
		cols := strings.Fields(strings.TrimPrefix(line, "#"))
		if len(cols) < 4 {
			continue
		}
		ops, err := bench.ParseOps(cols[0])
		if err != nil {
			continue
		}
		op := ops[0]
		fastest++
		if !slices.Contains(op.Algorithms(), cols[2]) && cols[2] != "(gocomms)" {
			t.Errorf("fastest line %q names no schedule of %v", line, op)
		}
	}
	if fastest != 19 { // two sizes of every op, one of barrier
		t.Errorf("%d fastest lines, want 19:\n%s", fastest, out)
	}
	for _, cols := range rows { // the nine columns, and an estimate but for send_recv's rows
		if len(cols) != 10 && len(cols) != 9 || len(cols) == 10 && number(t, cols[9]) <= 0 {
			t.Errorf("row %q: want nine columns and a positive estimate", cols)
		}
	}
}
