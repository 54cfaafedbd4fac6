package rma

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestLineFormat: rows print as mpi_rma.c's printf("%s %ld %d %.3f %.6f
// %s\n") does, so that bench/rma-peers.sh's and bench/rma-compare.sh's
// parsers (six fields, the first an op's name) read both.
func TestLineFormat(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{Result{Op: Put, Bytes: 8, Iters: 1000, TimeUS: 12.34567, GBps: 0.000648012, Checked: true}, "put 8 1000 12.346 0.000648 0\n"},
		{Result{Op: PutPipelined, Bytes: 67108864, Iters: 16, TimeUS: 22447.8284, GBps: 2.9895481, Checked: true, Wrong: 3}, "put_pipelined 67108864 16 22447.828 2.989548 3\n"},
		{Result{Op: CompareAndSwap, Bytes: 8, Iters: 100, TimeUS: 27.7, GBps: 0.000288}, "compare_and_swap 8 100 27.700 0.000288 -\n"},
	} {
		var b bytes.Buffer
		if err := WriteLine(&b, tc.r); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("WriteLine(%+v) = %q, want %q", tc.r, b.String(), tc.want)
		}
		if f := strings.Fields(b.String()); len(f) != 6 || f[0] != tc.r.Op.String() {
			t.Errorf("%q: not six fields led by the op", b.String())
		}
	}
}

func TestHeaderIsComments(t *testing.T) {
	var b bytes.Buffer
	h := Header{Version: "v0", Host: "h", Ranks: 3, Transport: "shm", Access: "separate", Config: DefaultConfig()}
	if err := WriteHeader(&b, h); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "# ") {
			t.Errorf("header line %q is not a comment", l)
		}
	}
	if last := lines[len(lines)-1]; last != Columns {
		t.Errorf("the header ends with %q, want the columns", last)
	}
	for _, want := range []string{"np=3", "rank 0 targets rank 1", "transport=shm", "window=67108864", "volume=1073741824", "check=1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in the header:\n%s", want, b.String())
		}
	}
}

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	r := Result{Op: FetchAndOp, Ranks: 2, Bytes: 8, Iters: 100, TimeUS: 25.9, GBps: 0.000309, Checked: true}
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%s: %v", b.String(), err)
	}
	if got["op"] != "fetch_and_op" || got["size"] != 8.0 || got["iters"] != 100.0 || got["GBps"] != 0.000309 || got["wrong"] != 0.0 {
		t.Errorf("JSON %s", b.String())
	}
}
