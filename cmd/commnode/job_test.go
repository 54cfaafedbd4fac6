package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/nccl"
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

// TestBackendFlag parses --backend, with $GOCOMMS_BACKEND as its default,
// and checks what it refuses: a name no backend has, and nccl on the CPU
// or with in-process ranks.
func TestBackendFlag(t *testing.T) {
	for _, tc := range []struct {
		env     string
		args    []string
		local   bool
		backend string
		bad     string // in the error; "" for none
	}{
		{"", nil, false, "native", ""},
		{"", nil, true, "native", ""},
		{"nccl", []string{"-device", "cuda"}, false, "nccl", ""},
		{"nccl", []string{"-device", "cuda:1"}, false, "nccl", ""},
		{"nccl", []string{"--backend", "native"}, true, "native", ""},
		{"", []string{"--backend", "nccl"}, false, "nccl", "runs on GPUs: give -device cuda"},
		{"nccl", []string{"-device", "cpu"}, false, "nccl", "runs on GPUs"},
		{"", []string{"--backend", "nccl", "-device", "cuda"}, true, "nccl", "not -local ranks"},
		{"mpi", nil, false, "mpi", `unknown backend "mpi" (known: native, nccl)`},
		{"", []string{"--backend", "NCCL"}, false, "NCCL", `unknown backend "NCCL"`},
	} {
		t.Setenv("GOCOMMS_BACKEND", tc.env)
		var j jobFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		j.register(fs)
		j.registerBackend(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		err := j.checkBackend(tc.local)
		if j.backend != tc.backend || (err == nil) != (tc.bad == "") || err != nil && !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("GOCOMMS_BACKEND=%q %q (local %v): backend %q, error %v; want %q, %q", tc.env, tc.args, tc.local, j.backend, err, tc.backend, tc.bad)
		}
	}
	var j jobFlags
	j.register(flag.NewFlagSet("rma", flag.ContinueOnError))
	if j.backend != "native" || j.unsupported() != nil {
		t.Errorf("a command without --backend runs on %q", j.backend)
	}
	j.backend = "nccl"
	if !errors.Is(j.unsupported(), nccl.ErrUnsupported) {
		t.Errorf("nccl declines with %v, want nccl.ErrUnsupported", j.unsupported())
	}
}

// TestBackendRefusals checks that verify, bench and demo refuse what
// --backend cannot run as usage errors, before anything starts.
func TestBackendRefusals(t *testing.T) {
	t.Setenv("GOCOMMS_BACKEND", "")
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"verify", []string{"--backend", "nccl"}, "runs on GPUs"},
		{"verify", []string{"--backend", "nccl", "-device", "cuda", "-local", "2"}, "not -local ranks"},
		{"verify", []string{"--backend", "gloo", "-local", "2"}, `unknown backend "gloo" (known: native, nccl)`},
		{"bench", []string{"--backend", "nccl", "-local", "2", "-device", "cuda:0"}, "not -local ranks"},
		{"bench", []string{"--backend", "nccl"}, "runs on GPUs"},
		{"bench", []string{"--backend", "x"}, `unknown backend "x"`},
		{"demo", []string{"--backend", "x"}, `unknown backend "x"`},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{tc.cmd}, tc.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) || !strings.Contains(errb.String(), "usage: commnode "+tc.cmd) || out.Len() > 0 {
			t.Errorf("%s %q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.cmd, tc.args, code, out.String(), errb.String(), tc.want)
		}
	}
	t.Setenv("GOCOMMS_BACKEND", "nccl")
	var out, errb bytes.Buffer
	if code := run([]string{"verify", "-local", "2"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "runs on GPUs") {
		t.Errorf("verify under GOCOMMS_BACKEND=nccl: exit %d, stderr %q", code, errb.String())
	}
}

// TestDemoSteps checks the commands the demo's ranks run: on the CPU for
// the native backend, on their GPU for nccl, with the backend named so
// that $GOCOMMS_BACKEND does not change it.
func TestDemoSteps(t *testing.T) {
	for _, tc := range []struct{ backend, want string }{
		{"native", "--backend native"},
		{"nccl", "--backend nccl -device cuda"},
	} {
		for _, step := range demoSteps(tc.backend) {
			if got := strings.Join(step, " "); !strings.HasSuffix(got, tc.want) {
				t.Errorf("%s: step %q does not end %q", tc.backend, got, tc.want)
			}
		}
	}
}
