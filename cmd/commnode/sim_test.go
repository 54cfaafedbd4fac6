package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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

	for _, bad := range [][]string{{"--op", "send_recv"}, {"--ranks", "5", "--nodes", "2"}, {"--faults", "melt:rank=1"}, {"--bytes", "lots"}, {"--topology", "torus"}} {
		if code := run(append([]string{"sim"}, bad...), &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}
