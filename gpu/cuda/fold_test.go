package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// TestDeviceFold folds random operands of every op and dtype, from 1 to
// 4 sources, into destinations that are sources and into one that is
// not, and compares every destination with package reduce: Combine of
// the sources in order, then Finish over their number.
func TestDeviceFold(t *testing.T) {
	devs := testDevices(t)
	ctx := testContext(t, devs[0])
	n := need{t}
	s := n.stream(ctx.NewStream())
	const most, rows = 10007, 5
	ranges := make([]TableRange, rows)
	for i := range ranges {
		// Each range starts an element or more into its allocation.
		ranges[i] = TableRange{Mem: n.mem(ctx.Alloc(8*most + 64)), Off: 8 * (i + 1), Len: 8 * most}
	}
	tab, err := ctx.NewTable(ranges)
	ok(t, err)
	defer tab.Close()
	ops, dts := reduceOps()
	for i, op := range ops {
		dt := dts[i]
		size := dt.Size()
		for _, count := range []int{0, 1, 1000, most - 3} {
			sources := 1 + (i+count)%4
			off := size * (count % 3) // elements in from each range's start
			r := rand.New(rand.NewPCG(uint64(i), uint64(count)))
			in := make([][]byte, sources)
			for q := range in {
				in[q] = operand(dt, count, r)
				ok(t, ctx.CopyHtoD(ranges[q].Mem, ranges[q].Off+off, in[q]))
			}
			want := append([]byte(nil), in[0]...)
			for _, x := range in[1:] {
				reduce.Combine(op, dt, want, want, x)
			}
			reduce.Finish(op, dt, want, sources)
			// Into every source but the first, and the range after them.
			first, dests := 1, sources
			ok(t, s.Fold(op, dt, tab, sources, first, dests, off, count))
			ok(t, s.Synchronize())
			for d := first; d < first+dests; d++ {
				got := make([]byte, len(want))
				ok(t, ctx.CopyDtoH(got, ranges[d].Mem, ranges[d].Off+off))
				if j := firstDifference(dt, got, want); j >= 0 {
					t.Errorf("%v %v, %d elements of %d sources: destination %d's element %d is %x, want %x",
						op, dt, count, sources, d, j, got[j*size:][:size], want[j*size:][:size])
				}
			}
		}
	}
}

// TestDeviceFoldMisuse checks that what a table or a fold must not be
// given fails with ErrInvalid or ErrClosed before the driver sees it.
func TestDeviceFoldMisuse(t *testing.T) {
	devs := testDevices(t)
	ctx := testContext(t, devs[0])
	n := need{t}
	s := n.stream(ctx.NewStream())
	a, b := n.mem(ctx.Alloc(64)), n.mem(ctx.Alloc(64))
	_, err := ctx.NewTable(nil)
	wantErr(t, "an empty table", err, ErrInvalid)
	_, err = ctx.NewTable([]TableRange{{Mem: a, Len: 32}, {Mem: a, Off: 16, Len: 32}})
	wantErr(t, "overlapping ranges", err, ErrInvalid)
	_, err = ctx.NewTable([]TableRange{{Mem: a, Off: 48, Len: 32}})
	wantErr(t, "a range past its allocation", err, ErrInvalid)
	tab, err := ctx.NewTable([]TableRange{{Mem: a, Len: 64}, {Mem: b, Off: 16, Len: 48}})
	ok(t, err)
	sum, f32 := reduce.New(reduce.Sum), tensor.Float32
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"no sources", s.Fold(sum, f32, tab, 0, 0, 1, 0, 4)},
		{"more sources than ranges", s.Fold(sum, f32, tab, 3, 0, 1, 0, 4)},
		{"destinations past the table", s.Fold(sum, f32, tab, 2, 1, 2, 0, 4)},
		{"past a range's end", s.Fold(sum, f32, tab, 2, 0, 2, 40, 4)},
		{"negative offset", s.Fold(sum, f32, tab, 2, 0, 2, -4, 1)},
		{"misaligned", s.Fold(sum, f32, tab, 2, 0, 2, 2, 1)},
		{"bitwise float", s.Fold(reduce.New(reduce.BAnd), f32, tab, 2, 0, 2, 0, 4)},
		{"nil table", s.Fold(sum, f32, nil, 1, 0, 1, 0, 4)},
	} {
		wantErr(t, tc.what, tc.err, ErrInvalid)
	}
	ok(t, s.Fold(sum, f32, tab, 2, 0, 2, 0, 12))
	ok(t, s.Synchronize())
	ok(t, b.Close())
	wantErr(t, "a range's memory closed", s.Fold(sum, f32, tab, 2, 0, 2, 0, 4), ErrClosed)
	ok(t, s.Fold(sum, f32, tab, 1, 0, 1, 0, 4)) // a's range alone is still open
	ok(t, tab.Close())
	wantErr(t, "a closed table", s.Fold(sum, f32, tab, 1, 0, 1, 0, 4), ErrClosed)
	ok(t, s.Synchronize())
}
