package errkind

import (
	"errors"
	"testing"
)

// TestKinds checks what each error matches: a sentinel itself and its
// parent; an error of a kind its kind, the kind's parent and its cause;
// and neither matches what it was not made from.
func TestKinds(t *testing.T) {
	broad := errors.New("unavailable")
	narrow := Sentinel("no library", broad)
	cause := errors.New("dlopen failed")
	other := errors.New("other")

	err := Of("gpu: libx not found", narrow, cause)
	for _, want := range []error{narrow, broad, cause} {
		if !errors.Is(err, want) {
			t.Errorf("%v does not match %v", err, want)
		}
	}
	if errors.Is(err, other) {
		t.Errorf("%v matches %v", err, other)
	}
	if !errors.Is(narrow, broad) || errors.Is(broad, narrow) {
		t.Error("a sentinel must wrap its parent, not the other way round")
	}
	if errors.Is(Of("x", narrow, nil), cause) {
		t.Error("an error without a cause matches one")
	}
	if err.Error() != "gpu: libx not found" || narrow.Error() != "no library" {
		t.Errorf("texts: %q, %q", err, narrow)
	}
}
