package tensor

import (
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestNew(t *testing.T) {
	x, err := New(Float32, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if x.Numel() != 6 || x.NBytes() != 24 || len(x.Bytes()) != 24 || x.Dim() != 2 ||
		!slices.Equal(x.Shape(), []int{2, 3}) || x.Device() != CPU || x.DType() != Float32 {
		t.Fatalf("New(Float32, 2, 3) = %v numel %d nbytes %d", x, x.Numel(), x.NBytes())
	}
	for _, b := range x.Bytes() {
		if b != 0 {
			t.Fatal("New is not zero-filled")
		}
	}
	if got := x.String(); got != "tensor(float32, [2 3], cpu)" {
		t.Errorf("String() = %q", got)
	}
	x.Shape()[0] = 99 // Shape returns a copy
	if x.Shape()[0] != 2 {
		t.Error("Shape() exposed internal state")
	}

	s, err := New(Int64)
	if err != nil || s.Numel() != 1 || s.NBytes() != 8 || s.Dim() != 0 || s.Rows() != 1 || s.RowElems() != 1 {
		t.Fatalf("scalar: %v, %v", s, err)
	}
	if got := s.String(); got != "tensor(int64, [], cpu)" {
		t.Errorf("scalar String() = %q", got)
	}

	e, err := New(Float16, 0, 5)
	if err != nil || e.Numel() != 0 || e.NBytes() != 0 || e.Rows() != 0 || e.RowElems() != 5 {
		t.Fatalf("empty: %v, %v", e, err)
	}

	shape := []int{4}
	y, _ := New(Uint8, shape...)
	shape[0] = 7 // New must not keep the caller's slice
	if y.Numel() != 4 || y.Shape()[0] != 4 {
		t.Error("New aliases the shape argument")
	}

	for _, bad := range []struct {
		dt    DType
		shape []int
	}{
		{Invalid, []int{1}}, {DType(77), nil}, {Float32, []int{-1}}, {Int8, []int{2, -3}},
		{Float64, []int{math.MaxInt / 4, 4}}, {Int8, []int{math.MaxInt, 2}},
	} {
		if x, err := New(bad.dt, bad.shape...); err == nil {
			t.Errorf("New(%v, %v) = %v, want error", bad.dt, bad.shape, x)
		}
	}
}

func TestFromSliceSharesMemory(t *testing.T) {
	s := []float32{1, 2, 3, 4}
	x := FromSlice(s)
	if x.DType() != Float32 || x.Numel() != 4 || !slices.Equal(x.Shape(), []int{4}) || x.NBytes() != 16 {
		t.Fatalf("FromSlice = %v", x)
	}
	if unsafe.SliceData(x.Bytes()) != (*byte)(unsafe.Pointer(&s[0])) {
		t.Fatal("FromSlice copied")
	}
	v, err := As[float32](x)
	if err != nil {
		t.Fatal(err)
	}
	v[2] = 42 // write through the view...
	if s[2] != 42 {
		t.Error("As view does not share the slice")
	}
	b := x.Bytes() // ...and read it back through the raw bytes
	if got := math.Float32frombits(uint32(b[8]) | uint32(b[9])<<8 | uint32(b[10])<<16 | uint32(b[11])<<24); got != 42 {
		t.Errorf("Bytes()[8:12] = %v, want 42 (little-endian host assumed)", got)
	}
	if x := FromSlice([]BF16(nil)); x.Numel() != 0 || x.NBytes() != 0 || x.DType() != BFloat16 {
		t.Errorf("FromSlice(nil) = %v", x)
	}
	if x := FromSlice([]bool{true, false}); x.DType() != Bool || x.NBytes() != 2 || x.Bytes()[0] != 1 {
		t.Errorf("FromSlice(bool) = %v % x", x, x.Bytes())
	}
}

func TestFromBytes(t *testing.T) {
	buf := make([]byte, 24)
	x, err := FromBytes(Int32, buf)
	if err != nil || x.Numel() != 6 || !slices.Equal(x.Shape(), []int{6}) {
		t.Fatalf("FromBytes 1-D: %v, %v", x, err)
	}
	x, err = FromBytes(Int32, buf, 2, 3)
	if err != nil || x.Numel() != 6 || !slices.Equal(x.Shape(), []int{2, 3}) {
		t.Fatalf("FromBytes 2x3: %v, %v", x, err)
	}
	v, _ := As[int32](x)
	v[5] = -1
	if buf[20] != 0xff || buf[23] != 0xff {
		t.Error("FromBytes copied")
	}
	if s, err := FromBytes(Float64, make([]byte, 8)[:8:8]); err != nil || s.Numel() != 1 {
		t.Errorf("FromBytes one element: %v %v", s, err)
	}
	for _, bad := range []struct {
		dt    DType
		n     int
		shape []int
	}{
		{Int32, 23, nil}, {Int32, 24, []int{5}}, {Int32, 24, []int{2, 4}}, {Invalid, 8, nil},
		{Int32, 24, []int{-6}}, {Float64, 4, nil},
	} {
		if x, err := FromBytes(bad.dt, make([]byte, bad.n), bad.shape...); err == nil {
			t.Errorf("FromBytes(%v, %d bytes, %v) = %v, want error", bad.dt, bad.n, bad.shape, x)
		}
	}
}

func TestAsErrors(t *testing.T) {
	x, _ := New(Float32, 3)
	if _, err := As[float64](x); err == nil {
		t.Error("As[float64] on float32 succeeded")
	}
	if _, err := As[uint16](FromSlice([]F16{1})); err == nil {
		t.Error("As[uint16] on float16 succeeded")
	}
	if _, err := As[float32](nil); err == nil {
		t.Error("As on nil succeeded")
	}
	dev := &Tensor{dtype: Float32, shape: []int{3}, numel: 3, device: CUDA(0)}
	if _, err := As[float32](dev); err == nil {
		t.Error("As on a CUDA tensor succeeded")
	}
	if dev.Bytes() != nil || dev.NBytes() != 12 || HasNaN(dev) {
		t.Error("device tensor metadata")
	}
}

// TestUnalignedView checks a view over an odd offset works: amd64 and arm64
// allow unaligned loads and stores, and checkptr (on under -race) allows
// unaligned pointers to pointer-free types.
func TestUnalignedView(t *testing.T) {
	buf := make([]byte, 8*4+1)
	x, err := FromBytes(Float64, buf[1:])
	if err != nil {
		t.Fatal(err)
	}
	v, err := As[float64](x)
	if err != nil {
		t.Fatal(err)
	}
	v[3] = 2.5
	if x.Float64At(3) != 2.5 {
		t.Error("unaligned view lost a write")
	}
}

func TestReshape(t *testing.T) {
	x, _ := New(Int16, 2, 3, 4)
	y, err := x.Reshape(6, 4)
	if err != nil || !slices.Equal(y.Shape(), []int{6, 4}) || y.Rows() != 6 || y.RowElems() != 4 {
		t.Fatalf("Reshape(6, 4) = %v, %v", y, err)
	}
	if unsafe.SliceData(y.Bytes()) != unsafe.SliceData(x.Bytes()) {
		t.Error("Reshape copied")
	}
	if !slices.Equal(x.Shape(), []int{2, 3, 4}) {
		t.Error("Reshape changed the original")
	}
	if y, err := x.Reshape(-1, 3); err != nil || !slices.Equal(y.Shape(), []int{8, 3}) {
		t.Errorf("Reshape(-1, 3) = %v, %v", y, err)
	}
	if y, err := x.Reshape(24); err != nil || y.Dim() != 1 {
		t.Errorf("Reshape(24) = %v, %v", y, err)
	}
	one, _ := New(Float32, 1, 1)
	if y, err := one.Reshape(); err != nil || y.Dim() != 0 || y.Numel() != 1 {
		t.Errorf("Reshape to scalar = %v, %v", y, err)
	}
	for _, bad := range [][]int{{5, 5}, {25}, {}, {-1, -1}, {-2, -12}, {-1, 5}, {0, -1}, {3, -8}} {
		if y, err := x.Reshape(bad...); err == nil {
			t.Errorf("Reshape(%v) = %v, want error", bad, y)
		}
	}
}

func TestNarrow(t *testing.T) {
	x := FromSlice([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	x2, _ := x.Reshape(2, 5)
	y, err := x2.Narrow(3, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y.Shape(), []int{4}) || y.Numel() != 4 || y.NBytes() != 16 || cap(y.Bytes()) != 16 {
		t.Fatalf("Narrow(3, 4) = %v cap %d", y, cap(y.Bytes()))
	}
	v, _ := As[int32](y)
	if !slices.Equal(v, []int32{3, 4, 5, 6}) {
		t.Errorf("Narrow(3, 4) = %v", v)
	}
	v[0] = -3
	if x.Int64At(3) != -3 {
		t.Error("Narrow copied")
	}
	for _, ok := range [][2]int{{0, 10}, {10, 0}, {0, 0}, {9, 1}} {
		if _, err := x.Narrow(ok[0], ok[1]); err != nil {
			t.Errorf("Narrow(%d, %d): %v", ok[0], ok[1], err)
		}
	}
	for _, bad := range [][2]int{{-1, 2}, {0, 11}, {10, 1}, {11, 0}, {5, -1}, {math.MaxInt, 2}, {2, math.MaxInt}} {
		if y, err := x.Narrow(bad[0], bad[1]); err == nil {
			t.Errorf("Narrow(%d, %d) = %v, want error", bad[0], bad[1], y)
		}
	}
}

// TestNarrowInto: a view made in place, again and again, is Narrow's and
// allocates nothing; one made over its own tensor narrows it.
func TestNarrowInto(t *testing.T) {
	x, _ := FromSlice([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}).Reshape(2, 5)
	var v Tensor
	for _, c := range [][2]int{{3, 4}, {0, 10}, {9, 1}, {5, 0}} {
		if err := x.NarrowInto(&v, c[0], c[1]); err != nil {
			t.Fatal(err)
		}
		want, _ := x.Narrow(c[0], c[1])
		got, _ := As[int32](&v)
		if w, _ := As[int32](want); !slices.Equal(got, w) || !slices.Equal(v.Shape(), want.Shape()) ||
			v.Dim() != 1 || cap(v.Bytes()) != cap(want.Bytes()) {
			t.Errorf("NarrowInto(%d, %d) = %v %v, want %v %v", c[0], c[1], &v, got, want, w)
		}
	}
	if allocs := testing.AllocsPerRun(10, func() { _ = x.NarrowInto(&v, 2, 3) }); allocs != 0 {
		t.Errorf("NarrowInto allocates %v times", allocs)
	}
	if err := x.NarrowInto(&v, 8, 3); err == nil {
		t.Error("NarrowInto(8, 3) of 10 elements: no error")
	}
	if err := (*Tensor)(nil).NarrowInto(&v, 0, 0); err == nil {
		t.Error("NarrowInto of nil: no error")
	}
	y := x.Clone()
	if err := y.NarrowInto(y, 6, 2); err != nil || y.Numel() != 2 || y.Int64At(0) != 6 || !slices.Equal(y.Shape(), []int{2}) {
		t.Errorf("NarrowInto itself = %v, %v", y, err)
	}
}

func TestRows(t *testing.T) {
	for _, c := range []struct {
		shape         []int
		rows, perRows int
	}{
		{nil, 1, 1}, {[]int{7}, 7, 1}, {[]int{3, 4}, 3, 4}, {[]int{2, 3, 4}, 2, 12},
		{[]int{0}, 0, 1}, {[]int{0, 3}, 0, 3}, {[]int{3, 0}, 3, 0}, {[]int{2, 0, 5}, 2, 0},
	} {
		x, err := New(Uint8, c.shape...)
		if err != nil {
			t.Fatal(err)
		}
		if x.Rows() != c.rows || x.RowElems() != c.perRows || x.Rows()*x.RowElems() != x.Numel() {
			t.Errorf("%v: Rows %d RowElems %d, want %d %d", c.shape, x.Rows(), x.RowElems(), c.rows, c.perRows)
		}
	}
}

func TestClone(t *testing.T) {
	x := FromSlice([]float64{1, 2, 3})
	c := x.Clone()
	c.SetFloat64(0, 9)
	if x.Float64At(0) != 1 || c.Float64At(0) != 9 || c.String() != x.String() {
		t.Error("Clone shares memory or lost metadata")
	}
	if e := FromSlice([]int8(nil)).Clone(); e.Numel() != 0 {
		t.Error("empty clone")
	}
}

func TestNilTensor(t *testing.T) {
	var x *Tensor
	if x.DType() != Invalid || x.Shape() != nil || x.Numel() != 0 || x.NBytes() != 0 || x.Bytes() != nil ||
		x.Device() != CPU || x.Rows() != 0 || x.RowElems() != 0 || x.Clone() != nil || x.Dim() != 0 ||
		x.String() != "tensor(nil)" || HasNaN(x) {
		t.Error("nil tensor gave a non-zero answer")
	}
	if _, err := x.Reshape(1); err == nil {
		t.Error("nil Reshape succeeded")
	}
	if _, err := x.Narrow(0, 0); err == nil {
		t.Error("nil Narrow succeeded")
	}
}

func TestAccessPanicsOutOfRange(t *testing.T) {
	x := FromSlice([]int8{1, 2})
	for _, i := range []int{-1, 2} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "out of range") {
					t.Errorf("index %d: recover() = %v", i, r)
				}
			}()
			x.Float64At(i)
		}()
	}
}
