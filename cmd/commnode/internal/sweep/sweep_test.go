package sweep

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		minB, maxB, factor int64
		want               []int64
	}{
		{8, 64, 2, []int64{8, 16, 32, 64}},
		{8, 100, 4, []int64{8, 32}},
		{8, 8, 2, []int64{8}},
		{16, 8, 2, nil},
		{1, math.MaxInt64, math.MaxInt64 / 2, []int64{1, math.MaxInt64 / 2}},
	} {
		if got := Sizes(tc.minB, tc.maxB, tc.factor); !slices.Equal(got, tc.want) {
			t.Errorf("Sizes(%d, %d, %d) = %v, want %v", tc.minB, tc.maxB, tc.factor, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	var got []string
	bad := func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) }
	Check(bad, 0, -1, 1, 0, -1, func(e int64) { bad("above %d", e) })
	want := []string{
		"-b must be at least 1 byte", "-e -1 is below -b 0", "above -1",
		"-f must be at least 2", "-n must be at least 1", "-w must not be negative",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check: %q, want %q", got, want)
	}
	got = nil
	Check(bad, 8, 64, 2, 1, 0, nil)
	if got != nil {
		t.Errorf("Check of a good sweep: %q", got)
	}
}
