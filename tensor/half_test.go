package tensor

import (
	"math"
	"math/big"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// refFormat is an independent model of a 16-bit float format: the positive
// values listed by bit pattern, decoded with a textbook formula, and a
// rounding function that searches for the two neighbours and compares the
// distances exactly with big.Rat.
type refFormat struct {
	name    string
	expBits uint // 5 for float16, 8 for bfloat16
	manBits uint // 10 for float16, 7 for bfloat16
	// vals[i] is the value of bit pattern i for every finite positive i,
	// followed by the value the next pattern would have with an unbounded
	// exponent. That last entry stands in for +Inf, which is where IEEE
	// rounding sends everything at or past the midpoint above the maximum.
	vals []float64
}

func newRefFormat(name string, expBits, manBits uint) *refFormat {
	r := &refFormat{name: name, expBits: expBits, manBits: manBits}
	inf := r.infBits()
	for b := uint16(0); b <= inf; b++ {
		r.vals = append(r.vals, r.decodeFinite(b))
	}
	return r
}

var (
	refF16  = newRefFormat("float16", 5, 10)
	refBF16 = newRefFormat("bfloat16", 8, 7)
)

func (r *refFormat) bias() int       { return 1<<(r.expBits-1) - 1 }
func (r *refFormat) infBits() uint16 { return uint16((1<<r.expBits - 1) << r.manBits) }

// decodeFinite decodes a non-negative pattern as if the exponent had no
// maximum (so the Inf pattern decodes to 2^(emax+1)).
func (r *refFormat) decodeFinite(b uint16) float64 {
	exp := int(b >> r.manBits)
	mant := float64(b & (1<<r.manBits - 1))
	if exp == 0 {
		return math.Ldexp(mant, 1-r.bias()-int(r.manBits))
	}
	return math.Ldexp(float64(int(1)<<r.manBits)+mant, exp-r.bias()-int(r.manBits))
}

// decode returns the value of any pattern, including signs, Inf and NaN.
func (r *refFormat) decode(b uint16) float64 {
	sign := 1.0
	if b&0x8000 != 0 {
		sign = -1
	}
	mag := b & 0x7fff
	inf := r.infBits()
	switch {
	case mag == inf:
		return math.Inf(int(sign))
	case mag > inf:
		return math.NaN()
	}
	return math.Copysign(r.decodeFinite(mag), sign)
}

// round returns the pattern nearest to x, ties to even; for NaN it returns
// the Inf pattern with a mantissa of 1 (callers check NaN-ness only).
func (r *refFormat) round(x float64) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign = 0x8000
	}
	inf := r.infBits()
	ax := math.Abs(x)
	switch {
	case math.IsNaN(x):
		return inf | 1
	case math.IsInf(x, 0), ax > r.vals[len(r.vals)-1]:
		return sign | inf
	}
	i := sort.SearchFloat64s(r.vals, ax) // first vals[i] >= ax
	if r.vals[i] == ax {
		return sign | uint16(i)
	}
	lo, hi := i-1, i
	below := new(big.Rat).Sub(rat(ax), rat(r.vals[lo]))
	above := new(big.Rat).Sub(rat(r.vals[hi]), rat(ax))
	pick := lo
	switch c := below.Cmp(above); {
	case c > 0:
		pick = hi
	case c == 0 && lo%2 != 0:
		pick = hi
	}
	return sign | uint16(pick) // pick == len(vals)-1 is exactly the Inf pattern
}

// fataler is what the checks need from *testing.T and *rapid.T alike.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func rat(f float64) *big.Rat { return new(big.Rat).SetFloat64(f) }

func TestRefFormatSanity(t *testing.T) {
	checks := []struct {
		got, want float64
	}{
		{refF16.decode(0x3c00), 1}, {refF16.decode(0x7bff), 65504}, {refF16.decode(0x0001), 0x1p-24},
		{refF16.decode(0x0400), 0x1p-14}, {refF16.decode(0xc000), -2}, {refF16.decode(0x7c00), math.Inf(1)},
		{refBF16.decode(0x3f80), 1}, {refBF16.decode(0x0001), 0x1p-133}, {refBF16.decode(0x7f7f), 0x1.fep127},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: %v, want %v", i, c.got, c.want)
		}
	}
}

// TestFloat16Exhaustive checks all 65536 patterns: decoding matches the
// reference, and f16 → f32 → f16 returns the same bits (NaNs stay NaN).
func TestFloat16Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := F16(i)
		f := h.Float32()
		want := refF16.decode(uint16(h))
		if math.IsNaN(want) {
			if !math.IsNaN(float64(f)) || !h.IsNaN() {
				t.Fatalf("%#04x: decoded %v, want NaN", i, f)
			}
			if back := Float16FromFloat32(f); !back.IsNaN() || back&0x8000 != h&0x8000 {
				t.Fatalf("%#04x: NaN round trip gave %#04x", i, back)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != math.Signbit(want) || h.IsNaN() {
			t.Fatalf("%#04x: decoded %v, want %v", i, f, want)
		}
		if back := Float16FromFloat32(f); back != h {
			t.Fatalf("%#04x: round trip gave %#04x", i, back)
		}
		if back := Float16FromFloat64(h.Float64()); back != h {
			t.Fatalf("%#04x: float64 round trip gave %#04x", i, back)
		}
	}
}

func TestBFloat16Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		b := BF16(i)
		f := b.Float32()
		want := refBF16.decode(uint16(b))
		if math.IsNaN(want) {
			if !math.IsNaN(float64(f)) || !b.IsNaN() || !BFloat16FromFloat32(f).IsNaN() {
				t.Fatalf("%#04x: NaN handling broken", i)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != math.Signbit(want) || b.IsNaN() {
			t.Fatalf("%#04x: decoded %v, want %v", i, f, want)
		}
		if back := BFloat16FromFloat32(f); back != b {
			t.Fatalf("%#04x: round trip gave %#04x", i, back)
		}
		if back := BFloat16FromFloat64(b.Float64()); back != b {
			t.Fatalf("%#04x: float64 round trip gave %#04x", i, back)
		}
	}
}

func checkF16(t fataler, f float32) {
	t.Helper()
	got, want := Float16FromFloat32(f), refF16.round(float64(f))
	if math.IsNaN(float64(f)) {
		if !got.IsNaN() {
			t.Fatalf("Float16FromFloat32(NaN %#08x) = %#04x, want NaN", math.Float32bits(f), got)
		}
		return
	}
	if uint16(got) != want {
		t.Fatalf("Float16FromFloat32(%g [%#08x]) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
	}
	// The general path must be right on its own too, not only for the
	// inputs the inlinable fast path leaves it.
	if slow := float16FromBits(math.Float32bits(f)); uint16(slow) != want {
		t.Fatalf("float16FromBits(%g [%#08x]) = %#04x, want %#04x", f, math.Float32bits(f), slow, want)
	}
	if fast, ok := Float16FromFloat32Fast(f); ok && fast != got {
		t.Fatalf("Float16FromFloat32Fast(%g) = %#04x, want %#04x", f, fast, got)
	} else if a := math.Abs(float64(f)); ok != (a == 0 || a >= 0x1p-14 && a < 0x1p16) {
		t.Fatalf("Float16FromFloat32Fast(%g) ok = %v", f, ok)
	}
}

func checkBF16(t fataler, f float32) {
	t.Helper()
	got, want := BFloat16FromFloat32(f), refBF16.round(float64(f))
	if math.IsNaN(float64(f)) {
		if !got.IsNaN() {
			t.Fatalf("BFloat16FromFloat32(NaN %#08x) = %#04x, want NaN", math.Float32bits(f), got)
		}
		return
	}
	if uint16(got) != want {
		t.Fatalf("BFloat16FromFloat32(%g [%#08x]) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
	}
}

func checkFromFloat64(t fataler, x float64) {
	t.Helper()
	if math.IsNaN(x) {
		if !Float16FromFloat64(x).IsNaN() || !BFloat16FromFloat64(x).IsNaN() {
			t.Fatalf("NaN did not stay NaN")
		}
		return
	}
	if got, want := Float16FromFloat64(x), refF16.round(x); uint16(got) != want {
		t.Fatalf("Float16FromFloat64(%g) = %#04x, want %#04x", x, got, want)
	}
	if got, want := BFloat16FromFloat64(x), refBF16.round(x); uint16(got) != want {
		t.Fatalf("BFloat16FromFloat64(%g) = %#04x, want %#04x", x, got, want)
	}
}

func TestHalfRoundingEdges(t *testing.T) {
	edges := []float32{
		0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 1.0 / 3,
		65504, 65519.996, 65520, 65536, 1e5, -65520, // max finite, just below/at the overflow tie
		0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1p-26, 0x1.8p-24, 0x1.4p-24, // smallest subnormal, ties around it
		0x1p-14, 0x1.ff8p-15, 0x1.ffcp-15, // smallest normal and the subnormal just below
		1 + 0x1p-11, 1 + 0x3p-11, 1 + 0x1p-11 + 0x1p-23, // ties to even at 1
		0x1.fep127, 0x1.ff8p127, 0x1.ff0p127, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-126, 0x1p-133, 0x1p-134, 0x1.8p-133,
		1 + 0x1p-8, 1 + 0x3p-8, 1 + 0x1p-8 + 0x1p-23,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000), math.Float32frombits(0x7fffffff),
	}
	for _, f := range edges {
		checkF16(t, f)
		checkBF16(t, f)
		checkFromFloat64(t, float64(f))
	}
	if h := Float16FromFloat32(float32(math.Copysign(0, -1))); h != 0x8000 {
		t.Errorf("-0 → %#04x", h)
	}
	if h := Float16FromFloat32(-0x1p-30); h != 0x8000 {
		t.Errorf("negative underflow → %#04x, want -0", h)
	}
	if h := Float16FromFloat32(65520); h != 0x7c00 {
		t.Errorf("65520 → %#04x, want +Inf", h)
	}
	if h := Float16FromFloat32(math.Nextafter32(65520, 0)); h != 0x7bff {
		t.Errorf("65519.99 → %#04x, want max finite", h)
	}
	if b := BFloat16FromFloat32(math.MaxFloat32); b != 0x7f80 {
		t.Errorf("MaxFloat32 → %#04x, want +Inf", b)
	}
}

// TestHalfRoundingTies checks, for every pair of adjacent positive values
// of each format (including the maximum and the overflow threshold), the
// exact midpoint and the float32 just either side of it, with both signs.
func TestHalfRoundingTies(t *testing.T) {
	for _, c := range []struct {
		ref   *refFormat
		check func(fataler, float32)
	}{{refF16, checkF16}, {refBF16, checkBF16}} {
		for i := 0; i+1 < len(c.ref.vals); i++ {
			mid := float32((c.ref.vals[i] + c.ref.vals[i+1]) / 2) // exact: needs one more bit
			for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1)))} {
				c.check(t, f)
				c.check(t, -f)
			}
		}
	}
}

// TestHalfFromFloat64Ties targets double rounding: values a hair (far below
// float32 precision) either side of each midpoint must round away from the
// tie, which naive float64 → float32 → 16-bit conversion gets wrong.
func TestHalfFromFloat64Ties(t *testing.T) {
	for _, ref := range []*refFormat{refF16, refBF16} {
		for i := 0; i+1 < len(ref.vals); i++ {
			mid := (ref.vals[i] + ref.vals[i+1]) / 2
			for _, x := range []float64{mid, mid * (1 + 0x1p-40), mid * (1 - 0x1p-40), ref.vals[i]} {
				checkFromFloat64(t, x)
				checkFromFloat64(t, -x)
			}
		}
	}
}

func TestHalfRoundingRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var f float32
		if rapid.Bool().Draw(t, "bits") {
			f = math.Float32frombits(rapid.Uint32().Draw(t, "pattern"))
		} else {
			f = rapid.Float32().Draw(t, "f")
		}
		checkF16(t, f)
		checkBF16(t, f)
		x := rapid.Float64().Draw(t, "x")
		checkFromFloat64(t, x)
	})
}

// TestHalfRoundingSweep walks float32 bit patterns with a prime stride so
// every exponent and many mantissas are covered, in both formats.
func TestHalfRoundingSweep(t *testing.T) {
	step := uint32(65537)
	if testing.Short() {
		step = 1<<20 + 7
	}
	for b := uint64(0); b < 1<<32; b += uint64(step) {
		f := math.Float32frombits(uint32(b))
		checkF16(t, f)
		checkBF16(t, f)
	}
}

func TestFloat32RoundOddInt(t *testing.T) {
	check := func(t fataler, v int64) {
		t.Helper()
		if got, want := Float16FromFloat32(float32RoundOddInt(v)), refF16.roundRat(new(big.Rat).SetInt64(v)); uint16(got) != want {
			t.Fatalf("float16 from %d = %#04x, want %#04x", v, got, want)
		}
		if got, want := BFloat16FromFloat32(float32RoundOddInt(v)), refBF16.roundRat(new(big.Rat).SetInt64(v)); uint16(got) != want {
			t.Fatalf("bfloat16 from %d = %#04x, want %#04x", v, got, want)
		}
	}
	// 1<<24+1<<16+1 and 1<<62+1<<54+1 sit just above a bfloat16 tie; going
	// through a round-to-nearest float32 or float64 would land on the tie.
	for _, v := range []int64{0, 1, -1, 65504, 65519, 65520, 1 << 24, 1<<24 + 1, 1<<24 + 1<<16 + 1,
		-(1<<24 + 1<<16 + 1), 1<<62 + 1<<54 + 1, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		check(t, v)
	}
	rapid.Check(t, func(t *rapid.T) { check(t, rapid.Int64().Draw(t, "v")) })
}

// roundRat rounds an exact rational (used for int64 inputs, which float64
// cannot hold exactly).
func (r *refFormat) roundRat(x *big.Rat) uint16 {
	var sign uint16
	ax := new(big.Rat).Abs(x)
	if x.Sign() < 0 {
		sign = 0x8000
	}
	i := sort.Search(len(r.vals), func(i int) bool { return rat(r.vals[i]).Cmp(ax) >= 0 })
	if i == len(r.vals) {
		return sign | r.infBits()
	}
	if rat(r.vals[i]).Cmp(ax) == 0 {
		return sign | uint16(i)
	}
	lo, hi := i-1, i
	below := new(big.Rat).Sub(ax, rat(r.vals[lo]))
	above := new(big.Rat).Sub(rat(r.vals[hi]), ax)
	pick := lo
	if c := below.Cmp(above); c > 0 || (c == 0 && lo%2 != 0) {
		pick = hi
	}
	return sign | uint16(pick)
}
