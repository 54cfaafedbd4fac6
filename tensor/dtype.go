package tensor

import "fmt"

// DType identifies the element type of a tensor.
type DType uint8

// The dtypes. The zero value is Invalid so that an uninitialised DType is
// never mistaken for a real one.
const (
	Invalid DType = iota
	Bool
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float16
	BFloat16
	Float32
	Float64

	numDTypes // sentinel; keep last
)

var dtypeInfo = [numDTypes]struct {
	name   string
	size   int
	float  bool
	int    bool
	signed bool
}{
	Bool:     {name: "bool", size: 1},
	Int8:     {name: "int8", size: 1, int: true, signed: true},
	Int16:    {name: "int16", size: 2, int: true, signed: true},
	Int32:    {name: "int32", size: 4, int: true, signed: true},
	Int64:    {name: "int64", size: 8, int: true, signed: true},
	Uint8:    {name: "uint8", size: 1, int: true},
	Uint16:   {name: "uint16", size: 2, int: true},
	Uint32:   {name: "uint32", size: 4, int: true},
	Uint64:   {name: "uint64", size: 8, int: true},
	Float16:  {name: "float16", size: 2, float: true, signed: true},
	BFloat16: {name: "bfloat16", size: 2, float: true, signed: true},
	Float32:  {name: "float32", size: 4, float: true, signed: true},
	Float64:  {name: "float64", size: 8, float: true, signed: true},
}

// dtypeAliases are the extra names torch accepts for some dtypes.
var dtypeAliases = map[string]DType{
	"half":   Float16,
	"float":  Float32,
	"double": Float64,
	"short":  Int16,
	"int":    Int32,
	"long":   Int64,
}

// DTypes returns every valid dtype in declaration order. The slice is fresh,
// so callers may modify it.
func DTypes() []DType {
	out := make([]DType, 0, numDTypes-1)
	for d := Bool; d < numDTypes; d++ {
		out = append(out, d)
	}
	return out
}

// ParseDType parses a dtype name as printed by String, or one of the torch
// aliases "half", "float", "double", "short", "int" and "long".
func ParseDType(s string) (DType, error) {
	for d := Bool; d < numDTypes; d++ {
		if dtypeInfo[d].name == s {
			return d, nil
		}
	}
	if d, ok := dtypeAliases[s]; ok {
		return d, nil
	}
	return Invalid, fmt.Errorf("tensor: unknown dtype %q", s)
}

// Valid reports whether d is one of the declared dtypes (not Invalid).
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// Size returns the number of bytes per element, or 0 for an invalid dtype.
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// String returns the canonical name, e.g. "bfloat16"; invalid dtypes print
// as "dtype(N)".
func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool { return d.Valid() && dtypeInfo[d].float }

// IsInteger reports whether d is a signed or unsigned integer dtype. Bool is
// not an integer.
func (d DType) IsInteger() bool { return d.Valid() && dtypeInfo[d].int }

// IsSigned reports whether d can represent negative values (signed integers
// and all floats).
func (d DType) IsSigned() bool { return d.Valid() && dtypeInfo[d].signed }
