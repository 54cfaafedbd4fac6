package main

import (
	"bytes"
	"strings"
	"testing"
)

// commnode demo launches real processes of the commnode binary; the
// end-to-end tests in test/ run it.

func TestUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(nil, &out, &errb); code != 2 {
		t.Fatalf("no args: exit %d, want 2", code)
	}
	if code := run([]string{"nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown command") {
		t.Fatalf("unknown command: exit %d, stderr %q", code, errb.String())
	}
	if code := run([]string{"demo", "-ranks", "0"}, &out, &errb); code != 2 {
		t.Fatalf("demo -ranks 0: exit %d, want 2", code)
	}
}
