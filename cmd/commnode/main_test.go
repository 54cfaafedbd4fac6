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

// TestHelp: help asked for is no usage error. The commands' list goes to
// stdout, a command's flags to stderr, as Go's flag package prints them.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String(), "commands:") {
			t.Errorf("%q: exit %d, stdout %q", args, code, out.String())
		}
	}
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "-h"}, {"help", c.name}} {
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != 0 || !strings.Contains(errb.String(), "usage: commnode "+c.name) {
				t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
			}
		}
	}
}
