package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/gocomms/gocomms", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}}
	want := "module   github.com/gocomms/gocomms v0.3.0\nrevision abc123 (modified) 2026-01-02T03:04:05Z\ngo       go1.26.0\n"
	if got := versionText(info); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := versionText(&debug.BuildInfo{GoVersion: "go1.26.0"}); !strings.Contains(got, "revision unknown\n") {
		t.Errorf("without VCS settings: %q", got)
	}
}

func TestVersionCommand(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"version"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "go       go1.") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
	if code := run([]string{"version", "extra"}, &out, &errs); code != 2 {
		t.Errorf("an argument: exit %d, want 2", code)
	}
}
