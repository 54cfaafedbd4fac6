package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rmaRun runs commnode rma with args and returns its exit status and
// output.
func rmaRun(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append([]string{"rma"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestRMABenchLines: the rows are mpi_rma.c's lines, "op size_bytes iters
// time_us GBps wrong", after comment lines; every op and size in sweep
// order, the atomics once, with iterations cut by -V.
func TestRMABenchLines(t *testing.T) {
	for _, ranks := range []string{"2", "3"} {
		code, out, errs := rmaRun("-local", ranks, "-b", "8", "-e", "64K", "-f", "8192", "-n", "40", "-w", "2", "-V", "1M")
		if code != 0 {
			t.Fatalf("%s ranks: exit %d: %s\n%s", ranks, code, errs, out)
		}
		for _, want := range []string{
			"# gocomms rma: gocomms ", "np=" + ranks + " pairs=1 (rank 0 targets rank 1; the others idle)",
			"transport=in-process access=unified", "\n# op size_bytes iters time_us GBps wrong\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s ranks: no %q in\n%s", ranks, want, out)
			}
		}
		var got []string
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, "#") {
				continue
			}
			f := strings.Fields(line)
			if len(f) != 6 || f[5] != "0" {
				t.Errorf("%s ranks: line %q, want six fields ending with 0 wrong", ranks, line)
				continue
			}
			for _, num := range f[3:5] {
				if v, err := strconv.ParseFloat(num, 64); err != nil || v <= 0 {
					t.Errorf("%s ranks: line %q: %q is not a positive number", ranks, line, num)
				}
			}
			got = append(got, strings.Join(f[:3], " "))
		}
		want := []string{
			"put 8 40", "put 65536 16", "put_pipelined 8 40", "put_pipelined 65536 16",
			"get 8 40", "get 65536 16", "fetch_and_op 8 40", "compare_and_swap 8 40",
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s ranks: rows %q, want %q", ranks, got, want)
		}
	}
}

func TestRMABenchJSON(t *testing.T) {
	code, out, errs := rmaRun("-local", "2", "--op", "get,fetch_and_op", "-b", "4K", "-e", "4K", "-n", "5", "-w", "1", "-c", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	var ops []string
	for line := range strings.Lines(out) {
		var r struct {
			Op      string  `json:"op"`
			Size    int64   `json:"size"`
			Iters   int     `json:"iters"`
			TimeUS  float64 `json:"time_us"`
			Checked bool    `json:"checked"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if r.Iters != 5 || r.TimeUS <= 0 || r.Checked {
			t.Errorf("row %q", line)
		}
		ops = append(ops, fmt.Sprint(r.Op, " ", r.Size))
	}
	if want := []string{"get 4096", "fetch_and_op 8"}; !slices.Equal(ops, want) {
		t.Errorf("rows %q, want %q", ops, want)
	}
}

func TestRMAVerifyLocal(t *testing.T) {
	for _, ranks := range []int{1, 2, 3} {
		code, out, errs := rmaRun("--verify", "-local", strconv.Itoa(ranks), "-counts", "4,1024", "-n", "3", "-adds", "20")
		if code != 0 {
			t.Fatalf("%d ranks: exit %d: %s\n%s", ranks, code, errs, out)
		}
		want := fmt.Sprintf("rma verify: 8 cases on %d ranks, all correct\n", ranks)
		if !strings.HasSuffix(out, want) {
			t.Errorf("%d ranks: no %q at the end of\n%s", ranks, want, out)
		}
		var rows []string
		for line := range strings.Lines(out) {
			if !strings.HasPrefix(line, "#") {
				rows = append(rows, strings.Join(strings.Fields(line), " "))
			}
		}
		for _, row := range []string{"ring float32 4 3 0", "ring int8 1024 3 0",
			fmt.Sprintf("fetch_and_op int64 1 %d 0", 20*ranks), fmt.Sprintf("compare_and_swap int64 1 %d 0", 20*ranks)} {
			if !slices.Contains(rows, row) {
				t.Errorf("%d ranks: no row %q in\n%s", ranks, row, out)
			}
		}
	}
}

func TestRMAUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--verify", "-b", "8"}, "-b does not apply to --verify"},
		{[]string{"--verify", "--json"}, "-json does not apply to --verify"},
		{[]string{"-counts", "4"}, "-counts does not apply to the bench"},
		{[]string{"-adds", "4"}, "-adds does not apply to the bench"},
		{[]string{"--verify", "-counts", "x"}, "-counts"},
		{[]string{"--verify", "-counts", "4,0"}, "at least one element"},
		{[]string{"--verify", "-adds", "0"}, "-adds"},
		{[]string{"-n", "0"}, "-n must be at least 1"},
		{[]string{"--verify", "-n", "0"}, "-n must be at least 1"},
		{[]string{"--op", "all_reduce"}, `unknown op "all_reduce"`},
		{[]string{"-c", "2"}, "-c must be 0 or 1"},
		{[]string{"-e", "1M", "-W", "64K"}, "-W"},
		{[]string{"-b", "1K", "-e", "8"}, "below -b"},
		{[]string{"-local", "1"}, "at least 2 ranks"},
		{[]string{"-local", "-1"}, "-local must not be negative"},
		{[]string{"-timeout", "0s"}, "-timeout must be positive"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-nope"}, "flag provided but not defined"},
	} {
		code, out, errs := rmaRun(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("rma %q: exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, errs, out, tc.want)
		}
	}
}
