package spans

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		nums []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{0, 1, 2, 5}, "0-2,5"},
		{[]int{0, 2, 4}, "0,2,4"},
		{[]int{7, 8}, "7-8"},
		{[]int{0, 1, 3, 4, 5, 9}, "0-1,3-5,9"},
	} {
		if got := Format(tc.nums, ","); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.nums, got, tc.want)
		}
	}
}

// TestFormatReadsBack: expanding what Format writes gives back the
// numbers, and no two parts could have been one range.
func TestFormatReadsBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nums := slices.Compact(slices.Sorted(slices.Values(rapid.SliceOf(rapid.IntRange(0, 200)).Draw(t, "nums"))))
		s := Format(nums, ",")
		var back []int
		last := -2
		for part := range strings.SplitSeq(s, ",") {
			if part == "" {
				continue
			}
			lo, hi, isRange := strings.Cut(part, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if isRange {
				b, _ = strconv.Atoi(hi)
			}
			if a <= last+1 {
				t.Fatalf("%q: part %q could join the one before", s, part)
			}
			for n := a; n <= b; n++ {
				back = append(back, n)
			}
			last = b
		}
		if !slices.Equal(back, nums) && len(nums) > 0 {
			t.Fatalf("Format(%v) = %q reads back as %v", nums, s, back)
		}
	})
}
