package ccompiler

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Find returns the C compiler, $CC or else cc, or an error saying that
// neither is on the PATH.
func Find() (string, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return "", fmt.Errorf("no C compiler (%s): %v", cc, err)
	}
	return cc, nil
}

// Equal asks cc whether each pair of C expressions has the same value,
// after prelude (the #includes that define them), with includes as the
// header search path: a syntax-only compile of one _Static_assert a
// pair. Where one differs it returns the compiler's words, naming the
// pair's first expression. No program is built or run.
func Equal(cc, prelude string, pairs [][2]string, includes ...string) ([]byte, error) {
	var src strings.Builder
	src.WriteString(prelude)
	for _, p := range pairs {
		fmt.Fprintf(&src, "_Static_assert((long long)(%s) == (long long)(%s), \"%s\");\n", p[0], p[1], p[0])
	}
	dir, err := os.MkdirTemp("", "ccompiler")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "check.c")
	if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-std=gnu11", "-fsyntax-only"}
	for _, dir := range includes {
		args = append(args, "-I", dir)
	}
	return exec.Command(cc, append(args, file)...).CombinedOutput()
}
