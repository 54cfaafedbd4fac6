package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestDemoChecksEveryCollective(t *testing.T) {
	for _, ranks := range []string{"1", "3", "4"} {
		var out, errb bytes.Buffer
		if code := run([]string{"demo", "-ranks", ranks}, &out, &errb); code != 0 {
			t.Fatalf("demo -ranks %s exited %d: %s", ranks, code, errb.String())
		}
		if !strings.Contains(out.String(), "all 10 operations correct on "+ranks+" ranks") || strings.Contains(out.String(), "WRONG") {
			t.Fatalf("demo -ranks %s printed:\n%s", ranks, out.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(nil, &out, &errb); code != 2 {
		t.Fatalf("no args: exit %d, want 2", code)
	}
	if code := run([]string{"nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown command") {
		t.Fatalf("unknown command: exit %d, stderr %q", code, errb.String())
	}
}
