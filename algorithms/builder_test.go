package algorithms

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func out(off, n int) Region     { return Region{Buf: Output, Off: off, Len: n} }
func outB(b, off, n int) Region { return Region{Buf: Output, Block: int32(b), Off: off, Len: n} }
func in(off, n int) Region      { return Region{Buf: Input, Off: off, Len: n} }

func deps(s *Schedule, i int) []int32 { return s.Steps[i].Deps }

func TestBuilderDependencies(t *testing.T) {
	for _, tc := range []struct {
		name string
		prog func(b *Builder)
		want [][]int32 // deps of each step
	}{
		{"read after write", func(b *Builder) {
			b.Recv(1, out(0, 4))
			b.Send(2, out(0, 4))
		}, [][]int32{nil, {0}}},
		{"disjoint regions are independent", func(b *Builder) {
			b.Recv(1, out(0, 4))
			b.Recv(1, out(4, 4))
			b.Send(2, out(4, 4))
			b.Send(2, out(0, 2))
		}, [][]int32{nil, nil, {1}, {0}}},
		{"write after read waits for the reader, not the writer it implies", func(b *Builder) {
			b.Recv(1, out(0, 4))
			b.Send(2, out(0, 4))
			b.Recv(1, out(0, 4))
		}, [][]int32{nil, {0}, {1}}},
		{"write after write", func(b *Builder) {
			b.Recv(1, out(0, 4))
			b.Recv(1, out(2, 4))
			b.Send(2, out(0, 6)) // 0 is implied by 1
		}, [][]int32{nil, {0}, {1}}},
		{"write over several readers", func(b *Builder) {
			b.Recv(1, out(0, 8))
			b.Send(2, out(0, 4))
			b.Send(3, out(4, 4))
			b.Recv(1, out(2, 4))
		}, [][]int32{nil, {0}, {0}, {1, 2}}},
		{"write partially covering a read keeps the rest live", func(b *Builder) {
			b.Recv(1, out(0, 8))
			b.Recv(1, out(0, 4))
			b.Send(2, out(0, 8)) // reads 0's [4:8] and 1's [0:4]; 1 implies 0
		}, [][]int32{nil, {0}, {1}}},
		{"no pruning across unrelated ranges", func(b *Builder) {
			b.Recv(1, out(0, 4))
			b.Recv(1, out(4, 4))
			b.Send(2, out(0, 8))
		}, [][]int32{nil, nil, {0, 1}}},
		{"recv reduce in place reads and writes", func(b *Builder) {
			b.Recv(1, out(0, 4))
			b.Send(2, out(0, 4))
			b.RecvReduce(1, out(0, 4), out(0, 4))
			b.Send(2, out(0, 4))
		}, [][]int32{nil, {0}, {1}, {2}}},
		{"recv reduce with separate operand", func(b *Builder) {
			b.RecvReduce(1, out(0, 4), in(0, 4))
			b.Send(2, in(0, 4))
			b.Copy(outB(1, 0, 4), out(0, 4))
		}, [][]int32{nil, nil, {0}}},
		{"Input never constrains", func(b *Builder) {
			b.Send(1, in(0, 4))
			b.Send(2, in(0, 4))
			b.Copy(out(0, 4), in(0, 4))
		}, [][]int32{nil, nil, nil}},
		{"blocks and buffers are separate", func(b *Builder) {
			s := b.Scratch(4)
			b.Recv(1, outB(0, 0, 4))
			b.Recv(1, outB(1, 0, 4))
			b.Recv(1, Region{Buf: Scratch, Block: s, Len: 4})
			b.Send(2, outB(1, 0, 4))
		}, [][]int32{nil, nil, nil, {1}}},
		{"copy reads source and writes destination", func(b *Builder) {
			b.Recv(1, out(0, 4))
			b.Copy(outB(1, 0, 4), out(0, 4))
			b.Recv(1, out(0, 4))
			b.Send(2, outB(1, 0, 4))
		}, [][]int32{nil, {0}, {1}, {1}}},
		{"tokens stay in program order", func(b *Builder) {
			tok := b.Token()
			b.Send(1, tok)
			b.Recv(2, tok)
			b.Send(2, tok)
			b.Recv(1, tok)
		}, [][]int32{nil, {0}, {1}, {2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(0, 4)
			b.Layout(Output, []int{8, 8})
			tc.prog(b)
			s := b.Build("test")
			if len(s.Steps) != len(tc.want) {
				t.Fatalf("%d steps, want %d", len(s.Steps), len(tc.want))
			}
			for i := range tc.want {
				if !slices.Equal(deps(s, i), tc.want[i]) {
					t.Errorf("step %d (%v): deps %v, want %v", i, s.Steps[i], deps(s, i), tc.want[i])
				}
			}
			if err := checkOrdering(s.Steps); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestBuilderTags(t *testing.T) {
	b := NewBuilder(1, 3)
	b.Send(0, out(0, 1))
	b.Send(2, out(1, 1))
	b.Recv(0, out(2, 1))
	b.Send(0, out(3, 1))
	b.RecvReduce(0, out(4, 1), in(4, 1))
	b.Recv(2, out(5, 1))
	s := b.Build("test")
	var got []string
	for _, st := range s.Steps {
		got = append(got, fmt.Sprintf("%v:%d#%d", st.Prim, st.Peer, st.Tag))
	}
	want := []string{"send:0#0", "send:2#0", "recv:0#0", "send:0#1", "recv_reduce:0#1", "recv:2#0"}
	if !slices.Equal(got, want) {
		t.Errorf("tags %v, want %v", got, want)
	}
	if s.Rank != 1 || s.Size != 3 || s.Algorithm != "test" {
		t.Errorf("schedule header %d/%d %q", s.Rank, s.Size, s.Algorithm)
	}
}

func TestBuilderPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		prog func(b *Builder)
		want string
	}{
		{"region past its block", func(b *Builder) { b.Send(1, out(6, 4)) }, "beyond its block"},
		{"missing block", func(b *Builder) { b.Send(1, outB(2, 0, 1)) }, "missing block"},
		{"missing buffer", func(b *Builder) { b.Send(1, in(0, 1)) }, "missing block"},
		{"negative offset", func(b *Builder) { b.Send(1, out(-1, 2)) }, "malformed"},
		{"empty region", func(b *Builder) { b.Send(1, out(0, 0)) }, "empty region"},
		{"write Input", func(b *Builder) { b.Recv(1, in(0, 1)) }, "writes the Input"},
		{"copy into Input", func(b *Builder) { b.Copy(in(0, 1), out(0, 1)) }, "writes the Input"},
		{"unallocated scratch", func(b *Builder) { b.Send(1, Region{Buf: Scratch, Len: 1}) }, "unallocated"},
		{"scratch overflow", func(b *Builder) { b.Send(1, Region{Buf: Scratch, Block: b.Scratch(2), Len: 3}) }, "beyond"},
		{"unknown buffer", func(b *Builder) { b.Send(1, Region{Buf: 7, Len: 1}) }, "unknown buffer"},
		{"self peer", func(b *Builder) { b.Send(0, out(0, 1)) }, "bad peer"},
		{"peer out of range", func(b *Builder) { b.Recv(4, out(0, 1)) }, "bad peer"},
		{"copy overlap", func(b *Builder) { b.Copy(out(0, 4), out(2, 4)) }, "overlaps"},
		{"copy length", func(b *Builder) { b.Copy(out(0, 4), outB(1, 0, 3)) }, "differ in length"},
		{"reduce partial overlap", func(b *Builder) { b.RecvReduce(1, out(0, 4), out(1, 4)) }, "partially overlaps"},
		{"reduce length", func(b *Builder) { b.RecvReduce(1, out(0, 4), outB(1, 0, 2)) }, "differ in length"},
		{"token as data", func(b *Builder) { b.Copy(out(0, 1), b.Token()) }, "token region"},
		{"token off zero", func(b *Builder) { tok := b.Token(); tok.Off = 1; b.Send(1, tok) }, "token region"},
		{"use after build", func(b *Builder) { b.Build("x"); b.Send(1, out(0, 1)) }, "after Build"},
		{"layout of scratch", func(b *Builder) { b.Layout(Scratch, nil) }, "only Input and Output"},
		{"negative scratch", func(b *Builder) { b.Scratch(-1) }, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("panic %v, want one mentioning %q", r, tc.want)
				}
			}()
			b := NewBuilder(0, 4)
			b.Layout(Input, nil)
			b.Layout(Output, []int{8, 8})
			tc.prog(b)
		})
	}
}

// checkOrdering verifies a schedule's DAG against a brute-force reading of
// program order: every pair of conflicting steps is ordered (one is an
// ancestor of the other), and every direct dep is itself a conflict.
func checkOrdering(steps []Step) error {
	anc := make([]big.Int, len(steps))
	for i := range steps {
		st := &steps[i]
		for _, d := range st.Deps {
			if !conflicts(st, &steps[d]) {
				return fmt.Errorf("step %d (%v) has spurious dep %d (%v)", i, *st, d, steps[d])
			}
			anc[i].Or(&anc[i], &anc[d])
			anc[i].SetBit(&anc[i], int(d), 1)
		}
		for j := range i {
			if conflicts(st, &steps[j]) && anc[i].Bit(j) == 0 {
				return fmt.Errorf("conflicting steps %d (%v) and %d (%v) are not ordered", j, steps[j], i, *st)
			}
		}
	}
	return nil
}

// TestBuilderProperty builds random programs over a few small blocks and
// checks the derived DAG by brute force.
func TestBuilderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const blockLen = 12
		b := NewBuilder(0, 3)
		b.Layout(Output, []int{blockLen, blockLen})
		scr := b.Scratch(blockLen)
		tok := b.Token()
		region := func(label string, buf Buffer) Region {
			off := rapid.IntRange(0, blockLen-1).Draw(t, label+".off")
			n := rapid.IntRange(1, blockLen-off).Draw(t, label+".len")
			r := Region{Buf: buf, Off: off, Len: n}
			switch buf {
			case Output:
				r.Block = int32(rapid.IntRange(0, 1).Draw(t, label+".block"))
			case Scratch:
				r.Block = scr
			}
			return r
		}
		writable := rapid.SampledFrom([]Buffer{Output, Scratch})
		readable := rapid.SampledFrom([]Buffer{Input, Output, Scratch})
		peer := rapid.IntRange(1, 2)
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := range steps {
			l := fmt.Sprint(i)
			switch rapid.IntRange(0, 5).Draw(t, l+".prim") {
			case 0:
				b.Send(peer.Draw(t, l+".peer"), region(l+".src", readable.Draw(t, l+".srcbuf")))
			case 1:
				b.Recv(peer.Draw(t, l+".peer"), region(l+".dst", writable.Draw(t, l+".dstbuf")))
			case 2:
				dst := region(l+".dst", writable.Draw(t, l+".dstbuf"))
				local := dst
				if rapid.Bool().Draw(t, l+".separate") {
					local = Region{Buf: Input, Off: dst.Off, Len: dst.Len}
				}
				b.RecvReduce(peer.Draw(t, l+".peer"), dst, local)
			case 3:
				dst := region(l+".dst", Output)
				src := Region{Buf: Scratch, Block: scr, Off: dst.Off, Len: dst.Len}
				if rapid.Bool().Draw(t, l+".flip") {
					src.Buf, src.Block = Input, 0
				}
				b.Copy(dst, src)
			case 4:
				b.Send(peer.Draw(t, l+".peer"), tok)
			case 5:
				b.Recv(peer.Draw(t, l+".peer"), tok)
			}
		}
		s := b.Build("random")
		if err := checkOrdering(s.Steps); err != nil {
			t.Fatal(err)
		}
		next := map[[2]int]int{}
		for i, st := range s.Steps {
			if st.Prim == Copy {
				continue
			}
			key := [2]int{int(st.Prim) / 2, st.Peer} // sends vs receives
			if st.Tag != next[key] {
				t.Fatalf("step %d (%v): tag %d, want %d", i, st, st.Tag, next[key])
			}
			next[key]++
		}
	})
}

func TestTopology(t *testing.T) {
	for p := 1; p <= 33; p++ {
		for root := range p {
			seen := map[int]bool{}
			for r := range p {
				parent := TreeParent(r, root, p)
				if (parent < 0) != (r == root) {
					t.Fatalf("p=%d root=%d: parent of %d is %d", p, root, r, parent)
				}
				if parent >= 0 && !slices.Contains(TreeChildren(parent, root, p, nil), r) {
					t.Fatalf("p=%d root=%d: %d not among its parent %d's children", p, root, r, parent)
				}
				sub := 1
				for _, c := range TreeChildren(r, root, p, nil) {
					if TreeParent(c, root, p) != r {
						t.Fatalf("p=%d root=%d: child %d of %d has parent %d", p, root, c, r, TreeParent(c, root, p))
					}
					sub += TreeSubtree(c, root, p)
					seen[c] = true
				}
				if sub != TreeSubtree(r, root, p) {
					t.Fatalf("p=%d root=%d: subtree of %d is %d, children add up to %d", p, root, r, TreeSubtree(r, root, p), sub)
				}
			}
			if len(seen) != p-1 {
				t.Fatalf("p=%d root=%d: %d ranks have parents", p, root, len(seen))
			}
		}
		for r := range p {
			if RingPrev(RingNext(r, p), p) != r {
				t.Fatalf("p=%d: ring neighbours of %d disagree", p, r)
			}
			for k := range DisseminationRounds(p) {
				to, from := DisseminationPartners(r, p, k)
				if back, _ := DisseminationPartners(from, p, k); back != r {
					t.Fatalf("p=%d round %d: %d hears from %d who notifies %d", p, k, r, from, back)
				}
				if to == r {
					t.Fatalf("p=%d round %d: %d notifies itself", p, k, r)
				}
			}
			if f := DoublingFold(r, p); f >= 0 && DoublingFold(f, p) != r {
				t.Fatalf("p=%d: fold partners %d and %d disagree", p, r, f)
			}
			for k := range DoublingRounds(p) {
				if q := DoublingPartner(r, p, k); q >= 0 && DoublingPartner(q, p, k) != r {
					t.Fatalf("p=%d round %d: doubling partners %d and %d disagree", p, k, r, q)
				}
			}
		}
		if p > 1 && 1<<DisseminationRounds(p) < p || 1<<DoublingRounds(p) > p {
			t.Fatalf("p=%d: %d dissemination rounds, %d doubling rounds", p, DisseminationRounds(p), DoublingRounds(p))
		}
	}
}

// naiveDeps derives deps the slow, obvious way: per element, the last writer
// and the readers since; then the same pruning as the Builder. It is the
// reference for the Builder's segment structure.
func naiveDeps(steps []Step) [][]int32 {
	type elem struct {
		writer  int32
		readers []int32
	}
	mem := map[[2]int][]elem{}
	cells := func(r Region) []elem {
		key := [2]int{int(r.Buf), int(r.Block)}
		m := mem[key]
		for len(m) < r.Off+max(r.Len, 1) {
			m = append(m, elem{writer: -1})
		}
		mem[key] = m
		return m[r.Off : r.Off+max(r.Len, 1)]
	}
	out := make([][]int32, len(steps))
	for i := range steps {
		st := &steps[i]
		var d []int32
		rd, reads := st.Reads()
		wr, writes := st.Writes()
		reads = reads && rd.Buf != Input
		if reads {
			for _, e := range cells(rd) {
				if e.writer >= 0 {
					d = append(d, e.writer)
				}
			}
		}
		if writes {
			for _, e := range cells(wr) {
				if len(e.readers) > 0 {
					d = append(d, e.readers...)
				} else if e.writer >= 0 {
					d = append(d, e.writer)
				}
			}
		}
		if reads {
			c := cells(rd)
			for k := range c {
				c[k].readers = append(c[k].readers, int32(i))
			}
		}
		if writes {
			c := cells(wr)
			for k := range c {
				c[k] = elem{writer: int32(i)}
			}
		}
		slices.Sort(d)
		d = slices.Compact(d)
		if len(d) > 1 && len(d) <= 64 {
			var keep []int32
			for k, x := range d {
				implied := false
				for _, y := range d[k+1:] {
					if slices.Contains(out[y], x) {
						implied = true
					}
				}
				if !implied {
					keep = append(keep, x)
				}
			}
			d = keep
		}
		out[i] = d
	}
	return out
}

// TestBuilderMatchesNaive drives the Builder with long random programs over
// a large block, so that it holds hundreds of segments (several buckets),
// with occasional wide writes that collapse many of them, and compares every
// step's deps with the per-element reference.
func TestBuilderMatchesNaive(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 7))
		const blockLen = 2048
		b := NewBuilder(0, 3)
		b.Layout(Output, []int{blockLen, blockLen})
		scr := b.Scratch(blockLen)
		region := func() Region {
			n := 1 + rng.IntN(6)
			if rng.IntN(40) == 0 {
				n = 1 + rng.IntN(600)
			}
			off := rng.IntN(blockLen - n + 1)
			r := Region{Buf: Output, Block: rng.Int32N(2), Off: off, Len: n}
			if rng.IntN(3) == 0 {
				r.Buf, r.Block = Scratch, scr
			}
			return r
		}
		for range 4000 {
			peer := 1 + rng.IntN(2)
			switch rng.IntN(4) {
			case 0:
				b.Send(peer, region())
			case 1:
				b.Recv(peer, region())
			case 2:
				dst := region()
				local := dst
				if rng.IntN(2) == 0 {
					local = Region{Buf: Input, Off: dst.Off, Len: dst.Len}
				}
				b.RecvReduce(peer, dst, local)
			case 3:
				src := region()
				dst := Region{Buf: Output, Block: 1 - src.Block, Off: src.Off, Len: src.Len}
				if src.Buf == Scratch {
					dst.Block = rng.Int32N(2)
				}
				b.Copy(dst, src)
			}
		}
		segs := 0
		for _, tr := range b.tracks[Output] {
			for _, bk := range tr.bk {
				segs += len(bk)
			}
		}
		s := b.Build("random")
		want := naiveDeps(s.Steps)
		for i := range s.Steps {
			if !slices.Equal(s.Steps[i].Deps, want[i]) {
				t.Fatalf("seed %d step %d (%v): deps %v, reference %v", seed, i, s.Steps[i], s.Steps[i].Deps, want[i])
			}
		}
		if segs < 4*bucketMax {
			t.Fatalf("seed %d: only %d segments; the test no longer spans buckets", seed, segs)
		}
	}
}
