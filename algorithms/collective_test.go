package algorithms

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

var allKinds = []Kind{AllReduce, Reduce, Broadcast, AllGather, ReduceScatter, AllToAll, Gather, Scatter, Barrier}

var tableSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16}

// Table element size and chunk: 4 elements per message, so 37 elements take
// ten chunks and pipelining is visible without big data.
const (
	tableElem  = 4
	tableChunk = 16
)

type countCase struct {
	name   string
	counts []int   // per kind layout; nil for AllToAll and Barrier
	matrix [][]int // AllToAll
}

// countCases lists the counts the table tries for kind at size p: 0, 1,
// fewer than ranks, odd, several chunks, and V forms where counts differ.
func countCases(k Kind, p int) []countCase {
	scalars := slices.Compact([]int{0, 1, max(p-1, 1), 5, 37})
	slices.Sort(scalars)
	scalars = slices.Compact(scalars)
	var cs []countCase
	switch k {
	case AllReduce, Reduce, Broadcast:
		for _, n := range append(scalars, 3*p+1) {
			cs = append(cs, countCase{name: fmt.Sprint(n), counts: []int{n}})
		}
	case AllGather, ReduceScatter, Gather, Scatter:
		for _, n := range scalars {
			cs = append(cs, countCase{name: fmt.Sprint(n), counts: uniform(p, n)})
		}
		cs = append(cs,
			countCase{name: "v_small", counts: vform(p, func(q int) int { return (q*7 + 3) % 5 })},
			countCase{name: "v_large", counts: vform(p, func(q int) int { return (q * 9) % 41 })},
		)
	case AllToAll:
		for _, n := range scalars {
			cs = append(cs, countCase{name: fmt.Sprint(n), matrix: matrix(p, func(r, q int) int { return n })})
		}
		cs = append(cs,
			countCase{name: "v_small", matrix: matrix(p, func(r, q int) int { return (r*5 + q*3) % 7 })},
			countCase{name: "v_large", matrix: matrix(p, func(r, q int) int { return (r + 2*q) % 4 * 9 })},
		)
	case Barrier:
		cs = append(cs, countCase{name: "none"})
	}
	return cs
}

func uniform(p, n int) []int { return vform(p, func(int) int { return n }) }
func vform(p int, f func(q int) int) []int {
	c := make([]int, p)
	for q := range c {
		c[q] = f(q)
	}
	return c
}
func matrix(p int, f func(r, q int) int) [][]int {
	m := make([][]int, p)
	for r := range m {
		m[r] = vform(p, func(q int) int { return f(r, q) })
	}
	return m
}

// specsFor expands a base spec into every rank's spec. For AllToAll, m[r][q]
// is the number of elements rank r sends to rank q.
func specsFor(base Spec, m [][]int) []Spec {
	specs := EveryRank(base)
	if base.Kind != AllToAll {
		return specs
	}
	for r := range specs {
		specs[r].SendCounts = slices.Clone(m[r])
		specs[r].RecvCounts = make([]int, base.Size)
		for q := range base.Size {
			specs[r].RecvCounts[q] = m[q][r]
		}
	}
	return specs
}

// simulateUnchecked runs schedules without the static or final checks and
// reports what became of each rank.
func simulateUnchecked(specs []Spec, seed uint64) (*network, error) {
	scheds := make([]*Schedule, len(specs))
	for r, s := range specs {
		var err error
		if scheds[r], err = Build(s); err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return run(specs, scheds, simOptions{seed: seed})
}

func inPlaceMeaningful(k Kind) bool { return k == AllReduce || k == Reduce || k == AllGather }

// TestCollectives runs every kind × algorithm × size × counts × root ×
// in-place through the symbolic network, then again with one message lost.
func TestCollectives(t *testing.T) {
	for _, kind := range allKinds {
		for _, alg := range NewRegistry().Algorithms(kind) {
			t.Run(kind.String()+"/"+alg, func(t *testing.T) {
				t.Parallel()
				seed := uint64(kind)<<32 | uint64(len(alg))
				ran := 0
				for _, p := range tableSizes {
					roots := []int{0}
					if (&Spec{Kind: kind}).rooted() {
						roots = roots[:0]
						for r := range p {
							roots = append(roots, r)
						}
					}
					inplace := []bool{false}
					if inPlaceMeaningful(kind) {
						inplace = append(inplace, true)
					}
					for _, cc := range countCases(kind, p) {
						for _, root := range roots {
							for _, ip := range inplace {
								seed++
								base := Spec{Kind: kind, Size: p, Root: root, Counts: cc.counts, ElemSize: tableElem, ChunkBytes: tableChunk, InPlace: ip, Algorithm: alg}
								name := fmt.Sprintf("p=%d counts=%s root=%d inplace=%v seed=%d", p, cc.name, root, ip, seed)
								specs := specsFor(base, cc.matrix)
								if no, err := refused(specs, true); err != nil {
									t.Fatalf("%s: %v", name, err)
								} else if no {
									continue
								}
								ran++
								if err := Check(specs, seed); err != nil {
									t.Fatalf("%s: %v", name, err)
								}
							}
						}
					}
				}
				if ran == 0 {
					t.Fatal("every case refused")
				}
			})
		}
	}
}

// refused reports whether Build refuses specs because their algorithm does
// not serve them (see requirements). A rank's refusal is an error unless it
// wraps ErrBadSpec and Build takes the same spec with no algorithm named;
// with alike, also unless every rank refuses, as every rank must where each
// one's own counts break the requirement.
func refused(specs []Spec, alike bool) (bool, error) {
	n := 0
	for r, s := range specs {
		_, err := Build(s)
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrBadSpec) {
			return false, fmt.Errorf("rank %d: %w", r, err)
		}
		s.Algorithm = ""
		if _, err := Build(s); err != nil {
			return false, fmt.Errorf("rank %d: the default algorithm refuses it too: %w", r, err)
		}
		n++
	}
	if alike && n > 0 && n < len(specs) {
		return false, fmt.Errorf("%d of %d ranks refuse", n, len(specs))
	}
	return n > 0, nil
}

// TestCollectivesProperty draws random kinds, sizes, counts (V forms and
// consistent AllToAll matrices included), roots, element and chunk sizes,
// algorithms and delivery orders.
func TestCollectivesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kind := rapid.SampledFrom(allKinds).Draw(t, "kind")
		alg := rapid.SampledFrom(append(NewRegistry().Algorithms(kind), "")).Draw(t, "algorithm")
		p := rapid.IntRange(1, 64).Draw(t, "size")
		count := rapid.IntRange(0, 40)
		base := Spec{
			Kind:       kind,
			Size:       p,
			ElemSize:   rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "elem"),
			ChunkBytes: rapid.SampledFrom([]int{0, 1, 3, 8, 16, 24, 64}).Draw(t, "chunk"),
			Algorithm:  alg,
		}
		if base.rooted() {
			base.Root = rapid.IntRange(0, p-1).Draw(t, "root")
		}
		if inPlaceMeaningful(kind) {
			base.InPlace = rapid.Bool().Draw(t, "inplace")
		}
		var m [][]int
		switch kind {
		case AllReduce, Reduce, Broadcast:
			base.Counts = []int{count.Draw(t, "n")}
		case AllGather, ReduceScatter, Gather, Scatter:
			base.Counts = rapid.SliceOfN(count, p, p).Draw(t, "counts")
		case AllToAll:
			if rapid.Bool().Draw(t, "uniform") { // the only matrices bruck serves
				n := count.Draw(t, "n")
				m = matrix(p, func(int, int) int { return n })
			} else {
				m = rapid.SliceOfN(rapid.SliceOfN(count, p, p), p, p).Draw(t, "matrix")
			}
		}
		specs := specsFor(base, m)
		// Random matrices may break a requirement in some ranks' rows and
		// columns only: the others cannot tell, so refusals need not agree.
		if no, err := refused(specs, false); err != nil {
			t.Fatalf("%v", err)
		} else if no {
			return
		}
		seed := rapid.Uint64().Draw(t, "seed")
		if _, err := simulate(specs, simOptions{seed: seed}); err != nil {
			t.Fatalf("%v", err)
		}
		if rapid.Bool().Draw(t, "drop") {
			scheds, err := buildAll(specs)
			if err != nil {
				t.Fatalf("%v", err)
			}
			if ms := messages(scheds); len(ms) > 0 {
				d := ms[rapid.IntRange(0, len(ms)-1).Draw(t, "dropped")]
				if _, err := simulate(specs, simOptions{seed: seed, drop: &d}); err != nil {
					t.Fatalf("dropping %v: %v", d, err)
				}
			}
		}
	})
}

// TestSchedulesOrderConflicts checks, exhaustively on small generated
// schedules, that every pair of conflicting steps is ordered by the DAG and
// every direct dep is a real conflict.
func TestSchedulesOrderConflicts(t *testing.T) {
	for _, kind := range allKinds {
		for _, alg := range NewRegistry().Algorithms(kind) {
			for _, p := range []int{1, 3, 4, 6} {
				for _, cc := range countCases(kind, p) {
					base := Spec{Kind: kind, Size: p, Root: p / 2, Counts: cc.counts, ElemSize: tableElem, ChunkBytes: tableChunk, Algorithm: alg}
					specs := specsFor(base, cc.matrix)
					if no, err := refused(specs, true); err != nil {
						t.Fatalf("%v %s p=%d counts=%s: %v", kind, alg, p, cc.name, err)
					} else if no {
						continue
					}
					for _, s := range specs {
						sc, err := Build(s)
						if err != nil {
							t.Fatal(err)
						}
						if err := checkOrdering(sc.Steps); err != nil {
							t.Fatalf("%v %s p=%d counts=%s rank %d: %v", kind, alg, p, cc.name, s.Rank, err)
						}
					}
				}
			}
		}
	}
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		n, p, elem int
		want       string
	}{
		{n: 0, p: 4, elem: 4, want: "recursive_doubling"},
		{n: 3, p: 4, elem: 4, want: "recursive_doubling"},
		{n: 16 << 10, p: 4, elem: 4, want: "recursive_doubling"},      // exactly 64 KiB
		{n: 16<<10 + 1, p: 4, elem: 4, want: "rabenseifner"},          // 16 KiB segments
		{n: 1 << 20, p: 8, elem: 1, want: "ring"},                     // exactly 128 KiB segments
		{n: 1<<20 - 1, p: 8, elem: 1, want: "rabenseifner"},           // some segments 1 B short
		{n: 1 << 20, p: 2 << 20, elem: 1, want: "recursive_doubling"}, // fewer elements than ranks
		{n: 16 << 20, p: 16, elem: 4, want: "ring"},                   // 64 MiB, 4 MiB segments
		{n: 16 << 20, p: 1000, elem: 4, want: "rabenseifner"},         // 64 MiB, 67 KB segments
		{n: 1 << 18, p: 100_000, elem: 4, want: "rabenseifner"},       // 1 MiB, 10 B segments
		{n: 99_999, p: 100_000, elem: 4, want: "recursive_doubling"},  // 400 KB, fewer elements than ranks
		{n: 1 << 30, p: 3, elem: 8, want: "ring"},                     // 8 GiB, 2.7 GiB segments
	} {
		s := Spec{Kind: AllReduce, Size: tc.p, Counts: []int{tc.n}, ElemSize: tc.elem}
		if got := Select(s); got != tc.want {
			t.Errorf("Select(n=%d p=%d elem=%d) = %q, want %q", tc.n, tc.p, tc.elem, got, tc.want)
		}
	}
	for _, k := range allKinds {
		algs := NewRegistry().Algorithms(k)
		if len(algs) == 0 {
			t.Errorf("%v has no algorithms", k)
			continue
		}
		if k != AllReduce && Select(Spec{Kind: k, Size: 4}) != algs[0] {
			t.Errorf("Select(%v) = %q, want the default %q", k, Select(Spec{Kind: k, Size: 4}), algs[0])
		}
		sc, err := Build(Spec{Kind: k, Size: 2, Counts: countCases(k, 2)[0].counts, SendCounts: uniformIf(k == AllToAll, 2), RecvCounts: uniformIf(k == AllToAll, 2), ElemSize: 4})
		if err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		if !slices.Contains(algs, sc.Algorithm) {
			t.Errorf("%v built with %q, not one of %q", k, sc.Algorithm, algs)
		}
	}
}

func TestSelectWeighsHostsAndTheTunedTable(t *testing.T) {
	mib := 1 << 20
	for _, tc := range []struct {
		s    Spec
		want string
	}{
		{Spec{Kind: AllReduce, Size: 16, LocalSize: 8, Counts: []int{16 * mib}, ElemSize: 4}, "hierarchical"}, // 4 MiB segments on 2 hosts
		{Spec{Kind: AllReduce, Size: 16, LocalSize: 16, Counts: []int{16 * mib}, ElemSize: 4}, "ring"},        // one host
		{Spec{Kind: AllReduce, Size: 16, LocalSize: 3, Counts: []int{16 * mib}, ElemSize: 4}, "ring"},         // no host numbering
		{Spec{Kind: AllReduce, Size: 16, LocalSize: 8, Counts: []int{mib / 16}, ElemSize: 4}, "rabenseifner"}, // 16 KiB segments
		{Spec{Kind: Gather, Size: 4, Counts: uniform(4, 16<<10), ElemSize: 4}, "linear"},                      // 256 KiB
		{Spec{Kind: Gather, Size: 4, Counts: uniform(4, 16<<10-1), ElemSize: 4}, "binomial"},
		{Spec{Kind: Scatter, Size: 8, Counts: uniform(8, mib), ElemSize: 1}, "linear"},
		{Spec{Kind: Scatter, Size: 2, Counts: uniform(2, mib), ElemSize: 1}, "binomial"}, // two ranks: the same messages
	} {
		if got := Select(tc.s); got != tc.want {
			t.Errorf("Select(%v on %d ranks, %d a host, counts %d…) = %q, want %q", tc.s.Kind, tc.s.Size, tc.s.LocalSize, tc.s.Counts[0], got, tc.want)
		}
	}
}

func uniformIf(ok bool, p int) []int {
	if !ok {
		return nil
	}
	return uniform(p, 3)
}

func TestKindString(t *testing.T) {
	want := []string{"all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter", "barrier"}
	for i, k := range allKinds {
		if k.String() != want[i] {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), want[i])
		}
	}
	if Kind(0).String() != "kind(0)" || Kind(42).String() != "kind(42)" {
		t.Errorf("unknown kinds print as %q, %q", Kind(0), Kind(42))
	}
}

func TestBuildRejectsBadSpecs(t *testing.T) {
	ok := Spec{Kind: AllReduce, Size: 4, Rank: 1, Counts: []int{8}, ElemSize: 4}
	for _, tc := range []struct {
		name string
		edit func(s *Spec)
		want string
	}{
		{"kind", func(s *Spec) { s.Kind = 0 }, "unknown kind"},
		{"size", func(s *Spec) { s.Size = 0 }, "size 0"},
		{"rank", func(s *Spec) { s.Rank = 4 }, "rank 4 out of range [0, 4)"},
		{"negative rank", func(s *Spec) { s.Rank = -1 }, "rank -1 out of range"},
		{"root", func(s *Spec) { s.Kind = Broadcast; s.Root = 7 }, "root 7 out of range [0, 4)"},
		{"elem", func(s *Spec) { s.ElemSize = 0 }, "element size 0"},
		{"chunk", func(s *Spec) { s.ChunkBytes = -1 }, "chunk bytes -1"},
		{"counts length", func(s *Spec) { s.Counts = []int{1, 2} }, "counts has 2 entries, want 1"},
		{"counts per rank", func(s *Spec) { s.Kind = AllGather }, "counts has 1 entries, want 4"},
		{"negative count", func(s *Spec) { s.Counts = []int{-3} }, "counts[0] = -3 is negative"},
		{"overflow", func(s *Spec) { s.ElemSize = 1 << 40; s.Counts = []int{1 << 40} }, "overflow"},
		{"alltoall counts", func(s *Spec) { s.Kind = AllToAll; s.Counts = nil; s.SendCounts = []int{1, 2, 3} }, "send counts has 3 entries, want 4"},
		{"alltoall self", func(s *Spec) {
			s.Kind, s.Counts, s.SendCounts, s.RecvCounts = AllToAll, nil, []int{1, 2, 3, 4}, []int{1, 3, 3, 4}
		}, "rank 1 sends itself 2 elements but receives 3"},
		{"stray send counts", func(s *Spec) { s.SendCounts = []int{1, 1, 1, 1} }, "send/recv counts are for all_to_all only"},
		{"barrier counts", func(s *Spec) { s.Kind = Barrier }, "counts given"},
		{"in place", func(s *Spec) { s.Kind, s.Counts, s.InPlace = Scatter, []int{1, 1, 1, 1}, true }, "in-place is not defined for scatter"},
		{"algorithm", func(s *Spec) { s.Algorithm = "bogus" }, `unknown algorithm "bogus"`},
		{"algorithm of another kind", func(s *Spec) { s.Algorithm = "pairwise" }, `unknown algorithm "pairwise"`},
		{"algorithm requirement", func(s *Spec) {
			s.Kind, s.Counts, s.SendCounts, s.RecvCounts, s.Algorithm = AllToAll, nil, []int{2, 2, 3, 2}, []int{2, 2, 2, 2}, "bruck"
		}, `algorithm "bruck" needs uniform counts, but rank 1 sends 2 elements to rank 0 and 3 to rank 2`},
	} {
		s := ok
		tc.edit(&s)
		_, err := Build(s)
		if !errors.Is(err, ErrBadSpec) {
			t.Errorf("%s: Build error %v, want ErrBadSpec", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), "algorithms: invalid spec") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.want)
		}
	}
	if _, err := Build(ok); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
}

func TestAllToAllCountMismatch(t *testing.T) {
	// Rank 0 thinks it sends rank 1 nothing; rank 1 expects 3 elements.
	m := [][]int{{2, 0}, {1, 2}}
	specs := specsFor(Spec{Kind: AllToAll, Size: 2, ElemSize: 4, ChunkBytes: 16}, m)
	specs[1].RecvCounts[0] = 3
	n, err := simulateUnchecked(specs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p := n.ranks[1].prog; p.Done() || !slices.Equal(p.Waiting(nil), []int{0}) {
		t.Fatalf("rank 1 done %v, waiting for %v; want stuck on rank 0", p.Done(), p.Waiting(nil))
	}
	// Now rank 0 sends 3 elements that rank 1 does not expect.
	specs = specsFor(Spec{Kind: AllToAll, Size: 2, ElemSize: 4, ChunkBytes: 16}, [][]int{{2, 3}, {1, 2}})
	specs[1].RecvCounts[0] = 0
	if _, err := simulateUnchecked(specs, 1); err == nil || !strings.Contains(err.Error(), "unexpected message from rank 0") {
		t.Fatalf("got %v, want an unexpected message error", err)
	}
}

func TestBuildDeterministic(t *testing.T) {
	for _, kind := range allKinds {
		for _, alg := range NewRegistry().Algorithms(kind) {
			cc := countCases(kind, 5)
			c := cc[len(cc)-1]
			base := Spec{Kind: kind, Size: 5, Root: 2, Counts: c.counts, ElemSize: 4, ChunkBytes: 16, Algorithm: alg}
			for _, s := range specsFor(base, c.matrix) {
				a, _ := Build(s)
				b, _ := Build(s)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("%v %s rank %d: two builds differ", kind, alg, s.Rank)
				}
			}
		}
	}
}

func TestBlocks(t *testing.T) {
	cs := []int{3, 1, 4}
	for _, tc := range []struct {
		s       Spec
		in, out []int
	}{
		{Spec{Kind: AllReduce, Counts: []int{5}}, []int{5}, []int{5}},
		{Spec{Kind: Reduce, Rank: 1, Root: 1, Counts: []int{5}}, []int{5}, []int{5}},
		{Spec{Kind: Reduce, Rank: 0, Root: 1, Counts: []int{5}}, []int{5}, nil},
		{Spec{Kind: Broadcast, Rank: 2, Counts: []int{5}}, nil, []int{5}},
		{Spec{Kind: AllGather, Rank: 2, Counts: cs}, []int{4}, cs},
		{Spec{Kind: ReduceScatter, Rank: 1, Counts: cs}, cs, []int{1}},
		{Spec{Kind: AllToAll, SendCounts: []int{1, 2, 3}, RecvCounts: []int{4, 5, 6}}, []int{1, 2, 3}, []int{4, 5, 6}},
		{Spec{Kind: Gather, Rank: 0, Root: 0, Counts: cs}, []int{3}, cs},
		{Spec{Kind: Gather, Rank: 1, Root: 0, Counts: cs}, []int{1}, nil},
		{Spec{Kind: Scatter, Rank: 2, Root: 2, Counts: cs}, cs, []int{4}},
		{Spec{Kind: Scatter, Rank: 1, Root: 2, Counts: cs}, nil, []int{1}},
		{Spec{Kind: Barrier}, nil, nil},
	} {
		if in, out := tc.s.Blocks(Input), tc.s.Blocks(Output); !slices.Equal(in, tc.in) || !slices.Equal(out, tc.out) || (out == nil) != (tc.out == nil) {
			t.Errorf("%v rank %d root %d: blocks %v / %v, want %v / %v", tc.s.Kind, tc.s.Rank, tc.s.Root, in, out, tc.in, tc.out)
		}
	}
}
