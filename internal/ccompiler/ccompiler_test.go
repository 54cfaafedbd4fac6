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
