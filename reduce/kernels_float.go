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
			f := a[i].Float32() + b[i].Float32()
			h, ok := tensor.Float16FromFloat32Fast(f) // inlined: no call on the common path
			if !ok {
				h = tensor.Float16FromFloat32(f)
			}
			dst[i] = h
		}
	case Product:
		for i := range dst {
			f := a[i].Float32() * b[i].Float32()
			h, ok := tensor.Float16FromFloat32Fast(f) // inlined: no call on the common path
			if !ok {
				h = tensor.Float16FromFloat32(f)
			}
			dst[i] = h
		}
	case Min:
		for i := range dst {
			f := min(a[i].Float32(), b[i].Float32())
			h, ok := tensor.Float16FromFloat32Fast(f) // inlined: no call on the common path
			if !ok {
				h = tensor.Float16FromFloat32(f)
			}
			dst[i] = h
		}
	case Max:
		for i := range dst {
			f := max(a[i].Float32(), b[i].Float32())
			h, ok := tensor.Float16FromFloat32Fast(f) // inlined: no call on the common path
			if !ok {
				h = tensor.Float16FromFloat32(f)
			}
			dst[i] = h
		}
	default:
		panic("reduce: " + k.String() + " reached combineF16") // Combine filters kinds first
	}
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
