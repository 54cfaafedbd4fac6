package store

import (
	"errors"
	"math"
)

var (
	errNotNumber  = errors.New("not a decimal number")
	errOutOfRange = errors.New("out of the int64 range")
)

// parseCounter reads a counter the way PyTorch's server does (std::stoll):
// leading white space is skipped, a sign is allowed, the digits that follow
// are the number and anything after them is ignored. No digits at all, or
// a value outside int64, is an error.
func parseCounter(b []byte) (int64, error) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	// Accumulate negatively so that math.MinInt64 parses.
	var n int64
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		d := int64(b[i] - '0')
		if n < (math.MinInt64+d)/10 {
			return 0, errOutOfRange
		}
		n = n*10 - d
	}
	if i == start {
		return 0, errNotNumber
	}
	if !neg {
		if n == math.MinInt64 {
			return 0, errOutOfRange
		}
		n = -n
	}
	return n, nil
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || ('\t' <= c && c <= '\r')
}

// addInt64 returns a+b, or false if that overflows.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	if (s > a) != (b > 0) {
		return 0, false
	}
	return s, true
}
