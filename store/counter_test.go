package store

import (
	"math"
	"testing"
)

// TestParseCounter pins the std::stoll reading PyTorch's server applies to a
// counter before ADD.
func TestParseCounter(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"5", 5, true},
		{"-2", -2, true},
		{"+3", 3, true},
		{" \t\n7", 7, true},
		{"7abc", 7, true}, // trailing junk is ignored
		{"12 34", 12, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"", 0, false},
		{"abc", 0, false},
		{"-", 0, false},
		{" + 1", 0, false},
		{"0x10", 0, true}, // decimal only: the "x" ends the number
	} {
		got, err := parseCounter([]byte(tt.in))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseCounter(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestAddInt64(t *testing.T) {
	for _, tt := range []struct {
		a, b int64
		ok   bool
	}{
		{1, 2, true},
		{math.MaxInt64, 0, true},
		{math.MaxInt64, 1, false},
		{math.MinInt64, -1, false},
		{math.MinInt64, math.MaxInt64, true},
		{-5, -6, true},
	} {
		got, ok := addInt64(tt.a, tt.b)
		if ok != tt.ok || (ok && got != tt.a+tt.b) {
			t.Errorf("addInt64(%d, %d) = %d, %v; want ok=%v", tt.a, tt.b, got, ok, tt.ok)
		}
	}
}
