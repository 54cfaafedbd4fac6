package reduce

import "github.com/gocomms/gocomms/tensor"

// combineF16 and combineBF16 widen each operand to float32, combine, and
// round back to nearest even: float32 accumulation per element, as NCCL
// does for half types. Min and Max round back a value that is already
// representable, so only NaNs change (they become quiet NaNs).

func combineF16(k Kind, dst, a, b []tensor.F16) {
	a, b = a[:len(dst)], b[:len(dst)]
	switch k {
	case Sum:
		for i := range dst {
			dst[i] = toF16(a[i].Float32() + b[i].Float32())
		}
	case Product:
		for i := range dst {
			dst[i] = toF16(a[i].Float32() * b[i].Float32())
		}
	case Min:
		for i := range dst {
			dst[i] = toF16(min(a[i].Float32(), b[i].Float32()))
		}
	case Max:
		for i := range dst {
			dst[i] = toF16(max(a[i].Float32(), b[i].Float32()))
		}
	default:
		panic("reduce: " + k.String() + " reached combineF16") // Combine filters kinds first
	}
}

// toF16 rounds f to float16. It must stay inlinable (check with
// -gcflags=-m): the fast path then costs no call, and only zeros,
// subnormals, Inf and NaN pay for one.
func toF16(f float32) tensor.F16 {
	if h, ok := tensor.Float16FromFloat32Normal(f); ok {
		return h
	}
	return tensor.Float16FromFloat32(f)
}

func combineBF16(k Kind, dst, a, b []tensor.BF16) {
	a, b = a[:len(dst)], b[:len(dst)]
	switch k {
	case Sum:
		for i := range dst {
			dst[i] = tensor.BFloat16FromFloat32(a[i].Float32() + b[i].Float32())
		}
	case Product:
		for i := range dst {
			dst[i] = tensor.BFloat16FromFloat32(a[i].Float32() * b[i].Float32())
		}
	case Min:
		for i := range dst {
			dst[i] = tensor.BFloat16FromFloat32(min(a[i].Float32(), b[i].Float32()))
		}
	case Max:
		for i := range dst {
			dst[i] = tensor.BFloat16FromFloat32(max(a[i].Float32(), b[i].Float32()))
		}
	default:
		panic("reduce: " + k.String() + " reached combineBF16") // Combine filters kinds first
	}
}
