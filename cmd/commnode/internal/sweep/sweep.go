package sweep

// Sizes returns the sizes from minB to maxB at most, each factor times the
// one before, in bytes. It stops before a step would pass maxB or
// overflow.
func Sizes(minB, maxB, factor int64) []int64 {
	var out []int64
	for s := minB; s <= maxB; s *= factor {
		out = append(out, s)
		if s > maxB/factor {
			break // the next step would pass maxB, or overflow
		}
	}
	return out
}

// Check reports to bad what is wrong with a sweep from minB to maxB bytes
// by factor, iters timed ops per size after warmup untimed ones. above,
// if not nil, is called with maxB between the checks of the sizes and of
// the counts, for a bound of the caller's own.
func Check(bad func(format string, args ...any), minB, maxB, factor int64, iters, warmup int, above func(maxB int64)) {
	if minB < 1 {
		bad("-b must be at least 1 byte")
	}
	if maxB < minB {
		bad("-e %d is below -b %d", maxB, minB)
	}
	if above != nil {
		above(maxB)
	}
	if factor < 2 {
		bad("-f must be at least 2")
	}
	if iters < 1 {
		bad("-n must be at least 1")
	}
	if warmup < 0 {
		bad("-w must not be negative")
	}
}
