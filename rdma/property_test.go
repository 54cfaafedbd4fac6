package rdma

import (
	"bytes"
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// TestModel runs random sequences of writes, reads, atomics, the owners'
// own stores and refused operations over two transports and two buffers,
// and checks after every step that the buffers and every returned value
// agree with a model: two plain byte arrays, changed by copy and by
// arithmetic on words.
func TestModel(t *testing.T) {
	a, b := newPair(t)
	ctx := testContext(t)
	const size = 256
	mems := [2]*Memory{register(t, alignedBytes(size)), register(t, alignedBytes(size))}
	transports := [2]*Transport{a, b}

	rapid.Check(t, func(rt *rapid.T) {
		var model [2][]byte
		for i, m := range mems {
			copy(m.buf, rapid.SliceOfN(rapid.Byte(), size, size).Draw(rt, "initial"))
			model[i] = bytes.Clone(m.buf)
		}
		// span draws a range of one buffer.
		span := func(rt *rapid.T) (off, n int) {
			off = rapid.IntRange(0, size).Draw(rt, "off")
			return off, rapid.IntRange(0, size-off).Draw(rt, "n")
		}
		word := func(rt *rapid.T, m int) (RemoteBuffer, int) {
			i := rapid.IntRange(0, size/8-1).Draw(rt, "word")
			r, _ := mems[m].Remote().Slice(uint64(8*i), 8)
			return r, 8 * i
		}
		check := func(rt *rapid.T) {
			for i, m := range mems {
				if !bytes.Equal(m.buf, model[i]) {
					rt.Fatalf("buffer %d differs from the model in %d bytes", i, diff(m.buf, model[i]))
				}
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"": check, // after every step
			"write": func(rt *rapid.T) {
				tr := transports[rapid.IntRange(0, 1).Draw(rt, "transport")]
				from := rapid.IntRange(0, 1).Draw(rt, "from")
				to := 1 - from // the same memory on both ends is the caller's race
				srcOff, n := span(rt)
				dstOff := rapid.IntRange(0, size-n).Draw(rt, "dst")
				v, _ := mems[from].View(srcOff, n)
				r, _ := mems[to].Remote().Slice(uint64(dstOff), uint64(n))
				if err := tr.Write(ctx, v, r, false); err != nil {
					rt.Fatal(err)
				}
				copy(model[to][dstOff:], model[from][srcOff:srcOff+n])
			},
			"read": func(rt *rapid.T) {
				tr := transports[rapid.IntRange(0, 1).Draw(rt, "transport")]
				into := rapid.IntRange(0, 1).Draw(rt, "into")
				from := 1 - into
				dstOff, n := span(rt)
				srcOff := rapid.IntRange(0, size-n).Draw(rt, "src")
				v, _ := mems[into].MutableView(dstOff, n)
				r, _ := mems[from].Remote().Slice(uint64(srcOff), uint64(n))
				if err := tr.Read(ctx, v, r); err != nil {
					rt.Fatal(err)
				}
				copy(model[into][dstOff:], model[from][srcOff:srcOff+n])
			},
			"fetch-add": func(rt *rapid.T) {
				tr := transports[rapid.IntRange(0, 1).Draw(rt, "transport")]
				m := rapid.IntRange(0, 1).Draw(rt, "mem")
				r, off := word(rt, m)
				add := rapid.Uint64().Draw(rt, "add")
				old, err := tr.FetchAdd(ctx, r, add)
				if err != nil {
					rt.Fatal(err)
				}
				if want := binaryNative.Uint64(model[m][off:]); old != want {
					rt.Fatalf("fetch-add returned %#x, model holds %#x", old, want)
				}
				binaryNative.PutUint64(model[m][off:], old+add)
			},
			"compare-and-swap": func(rt *rapid.T) {
				tr := transports[rapid.IntRange(0, 1).Draw(rt, "transport")]
				m := rapid.IntRange(0, 1).Draw(rt, "mem")
				r, off := word(rt, m)
				cur := binaryNative.Uint64(model[m][off:])
				compare := cur
				if rapid.Bool().Draw(rt, "mismatch") {
					compare = rapid.Uint64().Draw(rt, "compare")
				}
				swap := rapid.Uint64().Draw(rt, "swap")
				old, err := tr.CompareAndSwap(ctx, r, compare, swap)
				if err != nil {
					rt.Fatal(err)
				}
				if old != cur {
					rt.Fatalf("compare-and-swap returned %#x, model holds %#x", old, cur)
				}
				if compare == cur {
					binaryNative.PutUint64(model[m][off:], swap)
				}
			},
			"owner stores": func(rt *rapid.T) {
				m := rapid.IntRange(0, 1).Draw(rt, "mem")
				off, n := span(rt)
				b := rapid.Byte().Draw(rt, "byte")
				for i := off; i < off+n; i++ {
					mems[m].buf[i], model[m][i] = b, b
				}
			},
			"refused": func(rt *rapid.T) {
				tr := transports[rapid.IntRange(0, 1).Draw(rt, "transport")]
				off := rapid.IntRange(0, size).Draw(rt, "off")
				n := rapid.IntRange(size-off+1, size+8).Draw(rt, "n")
				r := mems[1].Remote()
				r.Addr += uint64(off)
				r.Len = uint64(n)
				v, _ := mems[0].View(0, min(n, size))
				var err error
				if n <= size {
					err = tr.Write(ctx, v, r, false)
				} else {
					_, err = tr.FetchAdd(ctx, RemoteBuffer{Addr: r.Addr | 1, Len: 8, Key: r.Key}, 1)
				}
				if !errors.Is(err, ErrBounds) {
					rt.Fatalf("out of bounds: %v, want ErrBounds", err)
				}
			},
		})
	})
}
