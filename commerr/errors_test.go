package commerr

import (
	"errors"
	"testing"
)

func TestOpErrorNamesEverything(t *testing.T) {
	err := error(&OpError{Comm: "main", Op: "all_reduce", Seq: 7, Rank: 1, Ranks: []int{2, 3},
		Err: errors.Join(ErrTimeout, errors.New("after 5s"))})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("errors.Is(ErrTimeout) = false for %v", err)
	}
	want := `gocomms: comm "main" rank 1: all_reduce #7 (ranks 2,3): timed out` + "\nafter 5s"
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Seq != 7 {
		t.Fatalf("errors.As failed: %v", err)
	}
}

func TestInvalidWrapsSentinel(t *testing.T) {
	err := Invalid("root %d out of range [0,%d)", 5, 4)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatal("Invalid does not wrap ErrInvalidArgument")
	}
	if got, want := err.Error(), "gocomms: invalid argument: root 5 out of range [0,4)"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}
