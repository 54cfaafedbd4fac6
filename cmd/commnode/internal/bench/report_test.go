package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
)

func TestTableIsNCCLTests(t *testing.T) {
	var out bytes.Buffer
	cfg := DefaultConfig()
	tab := NewTable(&out, Header{Version: "v1.2.3", Host: "node7", Ranks: 8, Config: cfg})
	rows := []Result{
		{Op: Op(algorithms.AllReduce), Bytes: 8, Count: 2, DType: "float32", RedOp: "sum", Root: -1, TimeUS: 18.544, AlgBW: 0, BusBW: 0, Checked: true},
		{Op: Op(algorithms.AllReduce), Bytes: 67108864, Count: 16777216, DType: "float32", RedOp: "sum", Root: -1, TimeUS: 12345.6, AlgBW: 5.44, BusBW: 9.52, Checked: true, Wrong: 3},
		{Op: Op(algorithms.Broadcast), Bytes: 1024, Count: 256, DType: "bfloat16", RedOp: "none", Root: 0, TimeUS: 123.45, AlgBW: 0.01, BusBW: 0.01},
	}
	for _, r := range rows {
		if err := tab.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	want := `# gocomms bench: gocomms v1.2.3, 8 ranks, rank 0 on host node7
# minBytes 8 maxBytes 67108864 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 dtype: float32 redop: sum root: 0 algo: auto
#
# all_reduce
#       size         count      type   redop    root     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       
           8             2   float32     sum      -1    18.54    0.00    0.00      0
    67108864      16777216   float32     sum      -1    12346    5.44    9.52      3
# Avg bus bandwidth    : 4.76 
#
# broadcast
#       size         count      type   redop    root     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       
        1024           256  bfloat16    none       0    123.5    0.01    0.01    N/A
# Avg bus bandwidth    : 0.01 
#
# Out of bounds values : 3 FAILED
#
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestTableHeadsSendRecv: send_recv is the zero Op, and a table that
// starts with it still has its heading.
func TestTableHeadsSendRecv(t *testing.T) {
	var out bytes.Buffer
	tab := NewTable(&out, Header{Ranks: 2, Config: DefaultConfig()})
	if err := tab.Add(Result{Op: SendRecv, Bytes: 8, Count: 2, DType: "float32", RedOp: "none", Root: -1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "#\n# send_recv\n") {
		t.Errorf("no send_recv heading in\n%s", out.String())
	}
}

func TestJSONLines(t *testing.T) {
	var out bytes.Buffer
	r := Result{Op: Op(algorithms.ReduceScatter), Ranks: 4, Bytes: 4096, Count: 256, DType: "float32", RedOp: "max", Root: -1,
		TimeUS: 10.5, AlgBW: 0.39, BusBW: 0.29, Checked: true}
	if err := WriteJSON(&out, r); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("want one line, got %q", line)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{
		"op": "reduce_scatter", "ranks": 4.0, "size": 4096.0, "count": 256.0, "type": "float32", "redop": "max",
		"root": -1.0, "time_us": 10.5, "algbw": 0.39, "busbw": 0.29, "checked": true, "wrong": 0.0,
	} {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if len(m) != 12 {
		t.Errorf("fields %v", m)
	}
}

func TestFormatTime(t *testing.T) {
	for us, want := range map[float64]string{
		0.5: "   0.50", 99.994: "  99.99", 100: "  100.0", 9999.9: " 9999.9", 10000: "  10000", 1234567: "1234567",
	} {
		if got := formatTime(us); got != want {
			t.Errorf("formatTime(%v) = %q, want %q", us, got, want)
		}
	}
}

func TestTableUnchecked(t *testing.T) {
	var out bytes.Buffer
	cfg := DefaultConfig()
	cfg.Check, cfg.RedOp, cfg.Algorithm = false, gocomms.Max, "ring"
	tab := NewTable(&out, Header{Version: "v0", Host: "h", Ranks: 2, Config: cfg})
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"validation: 0", "redop: max", "algo: ring", "# Out of bounds values : N/A (not checked)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
