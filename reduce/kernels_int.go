package reduce

// The loops in this file and kernels_float.go are the hot path of every
// reduction. Each one reslices a and b to len(dst) first so the compiler
// drops the bounds checks, and keeps the operator switch outside the loop.
// Generic loops are instantiated per underlying type (Go stencils by GC
// shape, and every numeric type is its own shape), so they compile to the
// same code as hand-written ones; BenchmarkGenericLoop checks that.

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

type number interface {
	integer | ~float32 | ~float64
}

// combineNumbers applies Sum, Product, Min or Max to integers or native
// floats. Integer overflow wraps, as Go defines it.
func combineNumbers[T number](k Kind, dst, a, b []T) {
	switch k {
	case Sum:
		sumLoop(dst, a, b)
	case Product:
		productLoop(dst, a, b)
	case Min:
		minLoop(dst, a, b)
	case Max:
		maxLoop(dst, a, b)
	default:
		panic("reduce: " + k.String() + " reached combineNumbers") // Combine filters kinds first
	}
}

func sumLoop[T number](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func productLoop[T number](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

// minLoop and maxLoop use the builtins, which for floats propagate NaN and
// order -0 below +0.
func minLoop[T number](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = min(a[i], b[i])
	}
}

func maxLoop[T number](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = max(a[i], b[i])
	}
}

// bitwise applies BAnd, BOr or BXor to integer buffers of any width: the
// operations act on bits alone, so the bytes are processed as 64-bit words
// with a byte loop for the tail.
func bitwise(k Kind, dst, a, b []byte) {
	n := len(dst) &^ 7
	dw, aw, bw := view[uint64](dst[:n]), view[uint64](a[:n]), view[uint64](b[:n])
	dt, at, bt := dst[n:], a[n:len(dst)], b[n:len(dst)]
	switch k {
	case BAnd:
		andLoop(dw, aw, bw)
		andLoop(dt, at, bt)
	case BOr:
		orLoop(dw, aw, bw)
		orLoop(dt, at, bt)
	case BXor:
		xorLoop(dw, aw, bw)
		xorLoop(dt, at, bt)
	default:
		panic("reduce: " + k.String() + " reached bitwise") // Combine filters kinds first
	}
}

func andLoop[T integer](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] & b[i]
	}
}

func orLoop[T integer](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] | b[i]
	}
}

func xorLoop[T integer](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] ^ b[i]
	}
}

// combineBool treats any non-zero byte as true and always writes 0 or 1,
// so bytes that arrived off the wire cannot make AND go wrong.
func combineBool(k Kind, dst, a, b []byte) {
	a, b = a[:len(dst)], b[:len(dst)]
	switch k {
	case Sum, Max, BOr:
		for i := range dst {
			dst[i] = b2u(a[i]|b[i] != 0)
		}
	case Product, Min, BAnd:
		for i := range dst {
			dst[i] = b2u(a[i] != 0) & b2u(b[i] != 0)
		}
	case BXor:
		for i := range dst {
			dst[i] = b2u(a[i] != 0) ^ b2u(b[i] != 0)
		}
	default:
		panic("reduce: " + k.String() + " reached combineBool") // Combine filters kinds first
	}
}

func b2u(v bool) byte {
	if v {
		return 1
	}
	return 0
}
