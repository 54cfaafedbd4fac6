package tensor

// Element is the set of Go types that back a dtype. F16 and BF16 are this
// package's bit types for Float16 and BFloat16, distinct from uint16.
type Element interface {
	bool | int8 | int16 | int32 | int64 |
		uint8 | uint16 | uint32 | uint64 |
		F16 | BF16 | float32 | float64
}

// DTypeOf returns the dtype whose elements are stored as T.
func DTypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case bool:
		return Bool
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case F16:
		return Float16
	case BF16:
		return BFloat16
	case float32:
		return Float32
	case float64:
		return Float64
	}
	return Invalid // unreachable: the constraint lists exactly the cases above
}
