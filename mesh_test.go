package gocomms_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms"
)

// meshShapes lists every ordered factorisation of n into one to three
// dimensions: [6], [2 3], [3 2], [1 2 3], ...
func meshShapes(n int) [][]int {
	var out [][]int
	var grow func(prefix []int, rest int)
	grow = func(prefix []int, rest int) {
		if len(prefix) > 0 && rest == 1 {
			out = append(out, slices.Clone(prefix))
		}
		if len(prefix) == 3 {
			return
		}
		for f := 1; f <= rest; f++ {
			if rest%f == 0 && (f > 1 || len(prefix) < 2) {
				grow(append(prefix, f), rest/f)
			}
		}
	}
	grow(nil, n)
	return out
}

// meshNames is "d0", "d1", ... for a mesh of k dimensions.
func meshNames(k int) []string {
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("d%d", i)
	}
	return names
}

// wantGroup is the reference of a mesh communicator over dims (in that
// order): the ranks of shape that share rank's other coordinates,
// ordered row-major over dims.
func wantGroup(shape []int, rank int, dims []int) []int {
	coords := func(r int) []int {
		c := make([]int, len(shape))
		for i := len(shape) - 1; i >= 0; i-- {
			c[i], r = r%shape[i], r/shape[i]
		}
		return c
	}
	mine := coords(rank)
	key := func(r int) int {
		k, c := 0, coords(r)
		for _, d := range dims {
			k = k*shape[d] + c[d]
		}
		return k
	}
	n := 1
	for _, s := range shape {
		n *= s
	}
	var group []int
	for q := range n {
		c := coords(q)
		same := true
		for i := range shape {
			if !slices.Contains(dims, i) && c[i] != mine[i] {
				same = false
			}
		}
		if same {
			group = append(group, q)
		}
	}
	slices.SortFunc(group, func(a, b int) int { return cmp.Compare(key(a), key(b)) })
	return group
}

// checkMeshComm checks that sub, the mesh communicator over dims, holds
// the reference group in order, and that its all-reduce of each rank's
// global rank plus one is the reference sum.
func checkMeshComm(ctx context.Context, c, sub *gocomms.Comm, shape, dims []int) error {
	want := wantGroup(shape, c.Rank(), dims)
	if got := sub.Ranks(); !slices.Equal(got, want) {
		return fmt.Errorf("rank %d: communicator over %v holds %v, want %v", c.Rank(), dims, got, want)
	}
	x := []int64{int64(c.Rank() + 1)}
	if err := sub.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
		return err
	}
	sum := int64(0)
	for _, q := range want {
		sum += int64(q + 1)
	}
	if x[0] != sum {
		return fmt.Errorf("rank %d: all-reduce over %v = %d, want %d", c.Rank(), dims, x[0], sum)
	}
	return nil
}

// checkMesh makes the mesh of shape on c and checks its coordinates, every
// dimension, and the flattening of flat (dimension indices, in order).
func checkMesh(ctx context.Context, c *gocomms.Comm, shape []int, flat []int) error {
	names := meshNames(len(shape))
	m, err := gocomms.NewMesh(ctx, c, shape, names)
	if err != nil {
		return err
	}
	defer m.Finalize(ctx)
	if want := wantGroup(shape, c.Rank(), nil); len(want) != 1 || want[0] != c.Rank() {
		return fmt.Errorf("reference: rank %d alone in no dimension is %v", c.Rank(), want)
	}
	coords := m.Coords()
	r := 0
	for i, s := range shape {
		r = r*s + coords[i]
	}
	if r != c.Rank() || !slices.Equal(m.Shape(), shape) || !slices.Equal(m.Names(), names) || m.Comm() != c {
		return fmt.Errorf("rank %d: mesh %v %v at %v", c.Rank(), m.Shape(), m.Names(), coords)
	}
	for i, name := range names {
		if err := checkMeshComm(ctx, c, m.Dim(name), shape, []int{i}); err != nil {
			return err
		}
	}
	if m.Dim("nope") != nil {
		return errors.New("Dim of an unknown name is not nil")
	}
	var fnames []string
	for _, d := range flat {
		fnames = append(fnames, names[d])
	}
	f, err := m.Flatten(ctx, fnames...)
	if err != nil {
		return err
	}
	if err := checkMeshComm(ctx, c, f, shape, flat); err != nil {
		return err
	}
	if again, err := m.Flatten(ctx, fnames...); err != nil || again != f {
		return fmt.Errorf("flattening %v again: %v, %v", fnames, again, err)
	}
	return m.Finalize(ctx)
}

// TestMesh makes every mesh of one to three dimensions on 1 to 8 ranks and
// checks the coordinates, each dimension's communicator and the flattening
// of all dimensions in reverse order against the reference.
func TestMesh(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for _, shape := range meshShapes(n) {
			t.Run(fmt.Sprintf("%v", shape), func(t *testing.T) {
				var flat []int
				for i := len(shape) - 1; i >= 0; i-- {
					flat = append(flat, i)
				}
				local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
					return checkMesh(ctx, c, shape, flat)
				})
			})
		}
	}
}

// TestPropertyMesh draws mesh shapes and an order of the dimensions to
// flatten: every communicator holds the ranks of the matching coordinates
// and its all-reduce is the reference sum over them.
func TestPropertyMesh(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(1, 3).Draw(rt, "dims")
		shape := make([]int, k)
		n := 1
		for i := range shape {
			shape[i] = rapid.IntRange(1, 8/n).Draw(rt, fmt.Sprintf("shape[%d]", i))
			n *= shape[i]
		}
		perm := rapid.Permutation(identityInts(k)).Draw(rt, "order")
		flat := perm[:rapid.IntRange(1, k).Draw(rt, "flattened")]
		err := gocomms.RunLocal(context.Background(), n, func(ctx context.Context, c *gocomms.Comm) error {
			return checkMesh(ctx, c, shape, flat)
		})
		if err != nil {
			rt.Fatal(err)
		}
	})
}

func identityInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestMeshInvalid: a wrong product, a missing name, a repeated one, and
// ranks that pass different shapes are errors on every rank.
func TestMeshInvalid(t *testing.T) {
	local(t, 4, func(ctx context.Context, c *gocomms.Comm) error {
		cases := []struct {
			shape []int
			names []string
		}{
			{[]int{3}, []string{"a"}},
			{[]int{2, 2}, []string{"a"}},
			{[]int{2, 2}, []string{"a", "a"}},
			{[]int{4, 0}, []string{"a", "b"}},
			{nil, nil},
			{[]int{2, 2}, []string{"a", []string{"b", "b", "c", "c"}[c.Rank()]}},
		}
		for _, tc := range cases {
			if m, err := gocomms.NewMesh(ctx, c, tc.shape, tc.names); m != nil || !errors.Is(err, gocomms.ErrInvalidArgument) {
				return fmt.Errorf("mesh %v %v: got %v, want an invalid argument", tc.shape, tc.names, err)
			}
		}
		m, err := gocomms.NewMesh(ctx, c, []int{2, 2}, []string{"a", "b"})
		if err != nil {
			return err
		}
		if _, err := m.Flatten(ctx, "a", "a"); !errors.Is(err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("flatten a a: %v", err)
		}
		if _, err := m.Flatten(ctx); !errors.Is(err, gocomms.ErrInvalidArgument) {
			return fmt.Errorf("flatten nothing: %v", err)
		}
		if err := m.Finalize(ctx); err != nil {
			return err
		}
		if _, err := m.Flatten(ctx, "a", "b"); !errors.Is(err, gocomms.ErrFinalized) {
			return fmt.Errorf("flatten after finalize: %v", err)
		}
		return nil
	})
}

// TestMeshShrink has rank 3 of a [3 2] mesh fail: the survivors shrink
// the mesh, which drops the dp slice of ranks 2 and 3; rank 2 leaves with
// nil, and ranks 0, 1, 4, 5 form a [2 2] mesh whose dimensions work.
func TestMeshShrink(t *testing.T) {
	const n, dead = 6, 3
	gate := newStartGate(n - 1)
	local(t, n, func(ctx context.Context, c *gocomms.Comm) error {
		m, err := gocomms.NewMesh(ctx, c, []int{3, 2}, []string{"dp", "tp"})
		if err != nil {
			return err
		}
		if c.Rank() == dead {
			gate.wait(ctx) // the others wait in the all-reduce
			c.Abort(errors.New("simulated crash"))
			m.Finalize(ctx)
			return nil
		}
		gate.arm(c, gocomms.OpAllReduce)
		err = c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(time.Minute))
		if e := wantErr(err, gocomms.ErrPeerFailed, "all_reduce with a rank gone"); e != nil {
			return e
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := m.Shrink(sctx)
		if err != nil {
			return fmt.Errorf("mesh shrink: %w", err)
		}
		if err := m.Finalize(ctx); err != nil {
			return fmt.Errorf("finalizing the old mesh: %w", err)
		}
		if c.Rank() == 2 {
			if s != nil {
				return errors.New("rank 2 of a dropped slice is still in the mesh")
			}
			return finalizeExpectingFailures(ctx, c)
		}
		if s == nil {
			return fmt.Errorf("rank %d left the mesh", c.Rank())
		}
		// The survivors' global ranks, laid out [2 2].
		alive := []int{0, 1, 4, 5}
		want := map[string][]int{"dp": {alive[s.Coords()[1]], alive[2+s.Coords()[1]]}, "tp": {alive[2*s.Coords()[0]], alive[2*s.Coords()[0]+1]}}
		if !slices.Equal(s.Shape(), []int{2, 2}) || alive[s.Comm().Rank()] != c.Rank() {
			return fmt.Errorf("rank %d: shrunk mesh %v, rank %d", c.Rank(), s.Shape(), s.Comm().Rank())
		}
		// In one order on every rank: each rank's two all-reduces wait on
		// different partners, which, in map order, could wait in a cycle.
		for _, name := range []string{"dp", "tp"} {
			group := want[name]
			d := s.Dim(name)
			if !slices.Equal(d.Ranks(), group) {
				return fmt.Errorf("rank %d: %s after shrinking holds %v, want %v", c.Rank(), name, d.Ranks(), group)
			}
			x := []int64{int64(c.Rank())}
			if err := d.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum); err != nil {
				return err
			}
			if x[0] != int64(group[0]+group[1]) {
				return fmt.Errorf("rank %d: %s all-reduce = %d, want %d", c.Rank(), name, x[0], group[0]+group[1])
			}
		}
		if err := s.Finalize(ctx); err != nil {
			return err
		}
		return finalizeExpectingFailures(ctx, c)
	})
}
