package bench

import (
	"bytes"
	"unsafe"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// pattern is what rank r writes at element i of its input before the
// checked op: small non-negative integers, exact in every dtype, chosen per
// reduction so that the result does not depend on the order in which the
// algorithm combined contributions. Checks are then exact comparisons.
type pattern struct {
	dt      gocomms.DType
	mod     int64 // values lie in [0, mod)
	product bool  // values are 1 or 2
}

// reduced as a region's source means the reduction over every rank.
const reduced = -1

func newPattern(dt gocomms.DType, op gocomms.ReduceOp, reduces bool, ranks int) pattern {
	p := pattern{dt: dt, mod: valueRange(dt)}
	if !reduces || !dt.IsFloat() {
		// Integers wrap alike in any order; min, max and bitwise ops are
		// exact; bool values are 0 and 1 anyway.
		p.product = reduces && op.Kind() == reduce.Product && dt != gocomms.Bool
		return p
	}
	switch op.Kind() {
	case reduce.Product:
		// Products of ones and twos are powers of two, exact until they
		// overflow, and since no factor is below one, an overflow to +Inf
		// happens whatever the order.
		p.product = true
	case reduce.Sum, reduce.Avg:
		// Partial sums stay below the largest run of exact integers.
		p.mod = max(2, min(p.mod, exactInts(dt)/int64(ranks)))
	}
	return p
}

// valueRange is the range of pattern values for dt: every value is exact,
// and small enough that a ring of ranks or an offset error shows.
func valueRange(dt gocomms.DType) int64 {
	switch dt {
	case gocomms.Bool:
		return 2
	case gocomms.Int8:
		return 1 << 7
	case gocomms.Uint8, gocomms.BFloat16:
		return 1 << 8
	case gocomms.Float16:
		return 1 << 11
	case gocomms.Int16, gocomms.Uint16:
		return 1 << 15
	}
	return 1 << 20
}

// exactInts is the count of consecutive integers from 0 that float dtype
// dt holds exactly.
func exactInts(dt gocomms.DType) int64 {
	switch dt {
	case gocomms.BFloat16:
		return 1 << 8
	case gocomms.Float16:
		return 1 << 11
	case gocomms.Float32:
		return 1 << 24
	}
	return 1 << 53
}

// at is a hash of (r, i) reduced to the pattern's values, so that ranks
// differ and an element out of place differs from the one it replaced.
func (p pattern) at(r, i int) int64 {
	x := uint64(i) + uint64(r+1)*0x9e3779b97f4a7c15 // splitmix64
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	if p.product {
		return 1 + int64(x%3/2) // one in three is 2
	}
	return int64(x % uint64(p.mod))
}

// fill writes pattern values of rank r, elements off, off+1, ... into buf.
func (p pattern) fill(buf []byte, r, off int) {
	switch p.dt {
	case gocomms.Bool:
		fillAs(buf, p, r, off, func(v int64) bool { return v != 0 })
	case gocomms.Int8:
		fillAs(buf, p, r, off, convert[int8])
	case gocomms.Int16:
		fillAs(buf, p, r, off, convert[int16])
	case gocomms.Int32:
		fillAs(buf, p, r, off, convert[int32])
	case gocomms.Int64:
		fillAs(buf, p, r, off, convert[int64])
	case gocomms.Uint8:
		fillAs(buf, p, r, off, convert[uint8])
	case gocomms.Uint16:
		fillAs(buf, p, r, off, convert[uint16])
	case gocomms.Uint32:
		fillAs(buf, p, r, off, convert[uint32])
	case gocomms.Uint64:
		fillAs(buf, p, r, off, convert[uint64])
	case gocomms.Float16:
		fillAs(buf, p, r, off, func(v int64) tensor.F16 { return tensor.Float16FromFloat32(float32(v)) })
	case gocomms.BFloat16:
		fillAs(buf, p, r, off, func(v int64) tensor.BF16 { return tensor.BFloat16FromFloat32(float32(v)) })
	case gocomms.Float32:
		fillAs(buf, p, r, off, convert[float32])
	case gocomms.Float64:
		fillAs(buf, p, r, off, convert[float64])
	}
}

// number is the element types an int64 converts to as Go converts it.
type number interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

// convert is Go's conversion, exact for pattern values in every number type.
func convert[T number](v int64) T { return T(v) }

func fillAs[T any](buf []byte, p pattern, r, off int, conv func(int64) T) {
	var z T
	s := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)/int(unsafe.Sizeof(z)))
	for i := range s {
		s[i] = conv(p.at(r, off+i))
	}
}

// A region is elements of one of this rank's buffers and the pattern they
// hold: rank src's elements from off on, or their reduction over every
// rank when src is reduced.
type region struct {
	buf []byte
	src int
	off int
}

// checker counts elements that differ from their reference, computed a
// chunk at a time so that checking needs no memory the size of the data.
type checker struct {
	pat      pattern // of the op being checked
	op       gocomms.ReduceOp
	ranks    int
	want     []byte
	contrib  []byte
	elemSize int
}

// checkChunk is the elements per reference chunk.
const checkChunk = 1 << 14

func newChecker(dt gocomms.DType, op gocomms.ReduceOp, ranks int) *checker {
	es := dt.Size()
	return &checker{op: op, ranks: ranks, elemSize: es,
		want: make([]byte, checkChunk*es), contrib: make([]byte, checkChunk*es)}
}

// wrong returns the number of elements of rg that differ from the
// reference, comparing bits: patterns hold no NaN and no negative zero.
func (c *checker) wrong(rg region) int64 {
	var n int64
	es := c.elemSize
	for lo := 0; lo < len(rg.buf); lo += len(c.want) {
		got := rg.buf[lo:min(lo+len(c.want), len(rg.buf))]
		want := c.want[:len(got)]
		c.reference(want, rg.src, rg.off+lo/es)
		if bytes.Equal(got, want) {
			continue
		}
		for i := 0; i < len(got); i += es {
			if !bytes.Equal(got[i:i+es], want[i:i+es]) {
				n++
			}
		}
	}
	return n
}

// reference writes into dst the elements from off on of rank src's
// pattern, or of their reduction, combined in rank order with the same
// kernels the engine uses; the patterns make any order give these bits.
func (c *checker) reference(dst []byte, src, off int) {
	if src != reduced {
		c.pat.fill(dst, src, off)
		return
	}
	contrib := c.contrib[:len(dst)]
	c.pat.fill(dst, 0, off)
	for q := 1; q < c.ranks; q++ {
		c.pat.fill(contrib, q, off)
		reduce.Combine(c.op, c.pat.dt, dst, dst, contrib)
	}
	reduce.Finish(c.op, c.pat.dt, dst, c.ranks)
}
