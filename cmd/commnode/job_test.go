package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestLogFlags parses the log flags of a job's command: --log-level and
// -v (its alias for debug, the later one winning), --log-format, and the
// values they refuse.
func TestLogFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		level   slog.Level
		format  string
		verbose bool
		bad     bool
	}{
		{args: nil, level: slog.LevelWarn, format: "text"},
		{args: []string{"-v"}, level: slog.LevelDebug, format: "text", verbose: true},
		{args: []string{"--log-level", "info"}, level: slog.LevelInfo, format: "text"},
		{args: []string{"--log-level=ERROR", "--log-format=json"}, level: slog.LevelError, format: "json"},
		{args: []string{"-v", "--log-level", "warn"}, level: slog.LevelWarn, format: "text", verbose: true},
		{args: []string{"--log-level", "info", "-v"}, level: slog.LevelDebug, format: "text", verbose: true},
		{args: []string{"-v=false"}, level: slog.LevelWarn, format: "text"},
		{args: []string{"--log-level", "loud"}, bad: true},
		{args: []string{"--log-format", "xml"}, bad: true},
	} {
		var j jobFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		j.register(fs)
		err := fs.Parse(tc.args)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: parsed, want an error", tc.args)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if j.level != tc.level || j.format.String() != tc.format || j.verbose != tc.verbose {
			t.Errorf("%q: level %v, format %s, verbose %v; want %v, %s, %v", tc.args, j.level, j.format.String(), j.verbose, tc.level, tc.format, tc.verbose)
		}
	}
}

// TestJSONLogger checks that --log-format json writes one JSON object a
// record, and that the level filters.
func TestJSONLogger(t *testing.T) {
	var j jobFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	j.register(fs)
	if err := fs.Parse([]string{"--log-format", "json", "--log-level", "info"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	l := j.logger(&buf)
	l.Debug("hidden")
	l.Info("shown", "rank", 3)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("log %q: want one line", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["msg"] != "shown" || rec["level"] != "INFO" || rec["rank"] != float64(3) {
		t.Errorf("record %v", rec)
	}
}
