package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Files returns the transcripts of dir, its *.txt files, and fails t if
// there are none.
func Files(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s: %v", dir, err)
	}
	return files
}

// Run replays file: do runs one command line and writes the actions it
// caused to w, one a line. A block whose actions differ from the file's
// fails t; with rewrite, the file gets the actions done instead.
func Run(t testing.TB, file string, rewrite bool, do func(line string, w *strings.Builder) error) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer // the transcript as rewritten
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if l == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			continue
		}
		start := line
		var cmds, got strings.Builder
		for ; ok && l != "----"; l, ok = next() {
			out.WriteString(l + "\n")
			cmds.WriteString(l + "\n")
			if err := do(l, &got); err != nil {
				t.Fatalf("%s:%d: %v", file, line, err)
			}
		}
		if !ok {
			t.Fatalf("%s:%d: the block has no ----", file, start)
		}
		out.WriteString("----\n")
		var want strings.Builder
		for l, ok = next(); ok && l != ""; l, ok = next() {
			want.WriteString(l + "\n")
		}
		out.WriteString(got.String())
		if ok {
			out.WriteString("\n")
		}
		if !rewrite && got.String() != want.String() {
			t.Errorf("%s:%d:\n%sgot:\n%swant:\n%s", file, start, cmds.String(), got.String(), want.String())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rewrite {
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Args are a command's key=value arguments. Its readers record each
// key they are asked for, and the first value they cannot read, which
// Unused reports.
type Args struct {
	vals map[string]string
	used map[string]bool
	err  error
}

// Parse splits a command line into its name and arguments.
func Parse(line string) (string, *Args, error) {
	args := &Args{vals: map[string]string{}, used: map[string]bool{}}
	var name string
	for rest := strings.TrimSpace(line); rest != ""; rest = strings.TrimLeft(rest, " ") {
		var tok string
		i := strings.IndexAny(rest, " \"")
		switch {
		case i < 0:
			tok, rest = rest, ""
		case rest[i] == '"':
			q, err := strconv.QuotedPrefix(rest[i:])
			if err != nil {
				return "", nil, fmt.Errorf("%q: %v", rest, err)
			}
			v, _ := strconv.Unquote(q)
			tok, rest = rest[:i]+v, rest[i+len(q):]
		default:
			tok, rest = rest[:i], rest[i:]
		}
		if name == "" {
			name = tok
			continue
		}
		k, v, _ := strings.Cut(tok, "=")
		args.vals[k] = v
	}
	return name, args, nil
}

// Has reports whether key is given.
func (a *Args) Has(key string) bool {
	a.used[key] = true
	_, ok := a.vals[key]
	return ok
}

// Text returns key's value, or def if it is not given.
func (a *Args) Text(key, def string) string {
	if a.Has(key) {
		return a.vals[key]
	}
	return def
}

// Int returns key's value as an int, or def if it is not given.
func (a *Args) Int(key string, def int) int {
	if !a.Has(key) {
		return def
	}
	n, err := strconv.Atoi(a.vals[key])
	a.fail(key, err)
	return n
}

// Uint returns key's value, which must be given, as a uint64.
func (a *Args) Uint(key string) uint64 {
	a.used[key] = true
	n, err := strconv.ParseUint(a.vals[key], 10, 64)
	a.fail(key, err)
	return n
}

// Ints returns key's value, a comma-separated list, as ints; nil if
// it is not given.
func (a *Args) Ints(key string) []int {
	if !a.Has(key) || a.vals[key] == "" {
		return nil
	}
	var ns []int
	for f := range strings.SplitSeq(a.vals[key], ",") {
		n, err := strconv.Atoi(f)
		a.fail(key, err)
		ns = append(ns, n)
	}
	return ns
}

// Cause returns key's value, or def, as an error.
func (a *Args) Cause(key, def string) error { return errors.New(a.Text(key, def)) }

func (a *Args) fail(key string, err error) {
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %v", key, err)
	}
}

// Unused reports an argument the command did not take, or one it could
// not read.
func (a *Args) Unused() error {
	if a.err != nil {
		return a.err
	}
	for k := range a.vals {
		if !a.used[k] {
			return fmt.Errorf("unknown argument %q", k)
		}
	}
	return nil
}
