package ccompiler

import (
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	t.Setenv("CC", "no-such-compiler-here")
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "no-such-compiler-here") {
		t.Errorf("Find with CC unusable: %v; want an error naming it", err)
	}
	t.Setenv("CC", "true") // any program on the PATH
	if cc, err := Find(); cc != "true" || err != nil {
		t.Errorf("Find with CC=true: %q, %v", cc, err)
	}
}

// TestEqual: pairs of the same value compile; one that differs fails,
// and the compiler's words name its first expression.
func TestEqual(t *testing.T) {
	cc, err := Find()
	if err != nil {
		t.Skipf("skip: %v", err)
	}
	prelude := "#include <limits.h>\nenum { MINE = 8 };\n"
	if out, err := Equal(cc, prelude, [][2]string{{"MINE", "CHAR_BIT"}, {"sizeof(char)", "1"}}); err != nil {
		t.Errorf("equal pairs: %v\n%s", err, out)
	}
	out, err := Equal(cc, prelude, [][2]string{{"MINE", "CHAR_BIT"}, {"MINE + 1", "CHAR_BIT"}})
	if err == nil || !strings.Contains(string(out), "MINE + 1") {
		t.Errorf("a pair that differs: %v\n%s", err, out)
	}
}
