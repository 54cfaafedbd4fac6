package tensor

import (
	"slices"
	"testing"
)

func TestDTypeTable(t *testing.T) {
	tests := []struct {
		dt                    DType
		name                  string
		size                  int
		float, integer, signd bool
	}{
		{Bool, "bool", 1, false, false, false},
		{Int8, "int8", 1, false, true, true},
		{Int16, "int16", 2, false, true, true},
		{Int32, "int32", 4, false, true, true},
		{Int64, "int64", 8, false, true, true},
		{Uint8, "uint8", 1, false, true, false},
		{Uint16, "uint16", 2, false, true, false},
		{Uint32, "uint32", 4, false, true, false},
		{Uint64, "uint64", 8, false, true, false},
		{Float16, "float16", 2, true, false, true},
		{BFloat16, "bfloat16", 2, true, false, true},
		{Float32, "float32", 4, true, false, true},
		{Float64, "float64", 8, true, false, true},
	}
	var order []DType
	for _, tt := range tests {
		order = append(order, tt.dt)
		if !tt.dt.Valid() {
			t.Errorf("%v: not valid", tt.dt)
		}
		if got := tt.dt.String(); got != tt.name {
			t.Errorf("String(%d) = %q, want %q", tt.dt, got, tt.name)
		}
		if got := tt.dt.Size(); got != tt.size {
			t.Errorf("%v.Size() = %d, want %d", tt.dt, got, tt.size)
		}
		if tt.dt.IsFloat() != tt.float || tt.dt.IsInteger() != tt.integer || tt.dt.IsSigned() != tt.signd {
			t.Errorf("%v: IsFloat/IsInteger/IsSigned = %v/%v/%v, want %v/%v/%v", tt.dt,
				tt.dt.IsFloat(), tt.dt.IsInteger(), tt.dt.IsSigned(), tt.float, tt.integer, tt.signd)
		}
		got, err := ParseDType(tt.name)
		if err != nil || got != tt.dt {
			t.Errorf("ParseDType(%q) = %v, %v", tt.name, got, err)
		}
	}
	if got := DTypes(); !slices.Equal(got, order) {
		t.Errorf("DTypes() = %v, want %v", got, order)
	}
	DTypes()[0] = Float64 // fresh slice: must not affect later calls
	if DTypes()[0] != Bool {
		t.Error("DTypes returned a shared slice")
	}
}

func TestDTypeInvalid(t *testing.T) {
	for _, d := range []DType{Invalid, numDTypes, 200} {
		if d.Valid() || d.Size() != 0 || d.IsFloat() || d.IsInteger() || d.IsSigned() {
			t.Errorf("%d: reported as valid or sized", d)
		}
	}
	if got := Invalid.String(); got != "dtype(0)" {
		t.Errorf("Invalid.String() = %q", got)
	}
	if got := DType(99).String(); got != "dtype(99)" {
		t.Errorf("DType(99).String() = %q", got)
	}
}

func TestParseDTypeAliases(t *testing.T) {
	for s, want := range map[string]DType{
		"float": Float32, "half": Float16, "double": Float64,
		"int": Int32, "long": Int64, "short": Int16,
	} {
		if got, err := ParseDType(s); err != nil || got != want {
			t.Errorf("ParseDType(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "Float32", "float8", "dtype(0)", "invalid", " int8"} {
		if got, err := ParseDType(s); err == nil {
			t.Errorf("ParseDType(%q) = %v, want error", s, got)
		}
	}
}

func TestDTypeOf(t *testing.T) {
	checks := []struct{ got, want DType }{
		{DTypeOf[bool](), Bool}, {DTypeOf[int8](), Int8}, {DTypeOf[int16](), Int16},
		{DTypeOf[int32](), Int32}, {DTypeOf[int64](), Int64}, {DTypeOf[uint8](), Uint8},
		{DTypeOf[uint16](), Uint16}, {DTypeOf[uint32](), Uint32}, {DTypeOf[uint64](), Uint64},
		{DTypeOf[F16](), Float16}, {DTypeOf[BF16](), BFloat16},
		{DTypeOf[float32](), Float32}, {DTypeOf[float64](), Float64},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("DTypeOf = %v, want %v", c.got, c.want)
		}
	}
}
