package gocomms

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/gocomms/gocomms/commerr"
)

// Mesh arranges the ranks of a communicator in N named dimensions, as
// torch's DeviceMesh (init_device_mesh): a communicator of 8 ranks with
// shape [2 4] and names ["dp" "tp"] is two data-parallel replicas of four
// tensor-parallel ranks.
//
// The layout is row-major, the last dimension varying fastest: rank r has
// coordinates c with r = Σ c[i]·stride[i], stride[i] the product of the
// shape after i. With shape [2 4], ranks 0-3 have dp 0 and ranks 4-7 dp 1;
// tp is r mod 4. Dim("tp") is the communicator of the ranks that share
// every other coordinate, ranked by their tp coordinate: {0 1 2 3} and
// {4 5 6 7}; Dim("dp") is {0 4}, {1 5}, ...
//
// A mesh's communicators are splits of its communicator, made when the
// mesh is; Finalize finalizes them, not the communicator it was made on.
// Its methods are safe for concurrent use, but Flatten and Shrink are
// collective: every rank calls them, in the same order.
type Mesh struct {
	c      *Comm
	shape  []int
	names  []string
	coords []int
	dims   []*Comm
	opts   []Option
	parent *Comm // a communicator Shrink made, which Finalize also ends

	mu        sync.Mutex
	flat      map[string]*Comm // Flatten's, by the names joined
	finalized bool
}

// NewMesh arranges c's ranks in a mesh of the given shape, one name per
// dimension, row-major (see Mesh); the product of shape must be c.Size().
// It is collective over c: every rank passes the same shape and names, and
// an invalid or differing one is an error on every rank. opts configure
// the communicators of the dimensions.
func NewMesh(ctx context.Context, c *Comm, shape []int, names []string, opts ...Option) (*Mesh, error) {
	desc := meshDesc{Shape: shape, Names: names}
	if err := checkMesh(c.Size(), shape, names); err != nil {
		desc = meshDesc{Invalid: err.Error()}
	}
	mine, err := json.Marshal(desc)
	if err != nil {
		return nil, c.opError(&Op{Name: opNewMesh}, err)
	}
	all, err := c.exchange(ctx, mine)
	if err != nil {
		return nil, c.objectError(opNewMesh, err)
	}
	for q, a := range all {
		var d meshDesc
		switch {
		case json.Unmarshal(a, &d) != nil:
			return nil, c.opError(&Op{Name: opNewMesh}, commerr.Invalid("rank %d sent no mesh", q))
		case d.Invalid != "":
			return nil, c.opError(&Op{Name: opNewMesh}, commerr.Invalid("rank %d: %s", q, strings.TrimPrefix(d.Invalid, ErrInvalidArgument.Error()+": ")))
		case !slices.Equal(d.Shape, shape) || !slices.Equal(d.Names, names):
			return nil, c.opError(&Op{Name: opNewMesh}, commerr.Invalid("rank %d's mesh is %v %v, rank %d's %v %v", q, d.Shape, d.Names, c.Rank(), shape, names))
		}
	}
	m := &Mesh{c: c, shape: slices.Clone(shape), names: slices.Clone(names), opts: opts, flat: map[string]*Comm{}}
	m.coords = coordsOf(c.Rank(), shape)
	for i := range shape {
		d, err := m.split(ctx, []int{i})
		if err != nil {
			m.Finalize(context.WithoutCancel(ctx))
			return nil, err
		}
		m.dims = append(m.dims, d)
	}
	return m, nil
}

// opNewMesh names NewMesh in its errors.
const opNewMesh OpName = "new_mesh"

// meshDesc is what a rank says of the mesh it makes, compared on every
// rank.
type meshDesc struct {
	Shape   []int    `json:",omitempty"`
	Names   []string `json:",omitempty"`
	Invalid string   `json:",omitempty"`
}

func checkMesh(size int, shape []int, names []string) error {
	if len(shape) == 0 || len(shape) != len(names) {
		return commerr.Invalid("a mesh needs one name per dimension and at least one dimension, got shape %v and names %q", shape, names)
	}
	n := 1
	for i, s := range shape {
		if s < 1 {
			return commerr.Invalid("dimension %q has size %d", names[i], s)
		}
		if names[i] == "" || slices.Index(names, names[i]) != i {
			return commerr.Invalid("dimension names must be distinct and not empty, got %q", names)
		}
		n *= s
	}
	if n != size {
		return commerr.Invalid("mesh shape %v holds %d ranks, the communicator %d", shape, n, size)
	}
	return nil
}

// coordsOf is rank's coordinates in a row-major mesh of shape.
func coordsOf(rank int, shape []int) []int {
	coords := make([]int, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		coords[i] = rank % shape[i]
		rank /= shape[i]
	}
	return coords
}

// split makes the communicator over the dimensions dims, in that order:
// the ranks that share every other coordinate, ranked row-major over dims.
func (m *Mesh) split(ctx context.Context, dims []int) (*Comm, error) {
	color, key := 0, 0
	for i, s := range m.shape {
		if !slices.Contains(dims, i) {
			color = color*s + m.coords[i]
		}
	}
	for _, i := range dims {
		key = key*m.shape[i] + m.coords[i]
	}
	return m.c.SplitByColor(ctx, color, key, m.opts...)
}

// Comm returns the communicator the mesh was made on.
func (m *Mesh) Comm() *Comm { return m.c }

// Shape returns the size of every dimension.
func (m *Mesh) Shape() []int { return slices.Clone(m.shape) }

// Names returns the name of every dimension.
func (m *Mesh) Names() []string { return slices.Clone(m.names) }

// Coords returns this rank's coordinates.
func (m *Mesh) Coords() []int { return slices.Clone(m.coords) }

// Dim returns the communicator along the dimension name: the ranks that
// share this rank's other coordinates, ranked by their coordinate there.
// It is nil for a name the mesh does not have.
func (m *Mesh) Dim(name string) *Comm {
	if i := slices.Index(m.names, name); i >= 0 {
		return m.dims[i]
	}
	return nil
}

// Flatten returns the communicator over the dimensions named, as one: the
// ranks that share this rank's other coordinates, ranked row-major over
// the names in the order given. It is collective over the mesh's
// communicator the first time for each list of names; later calls return
// the same communicator.
func (m *Mesh) Flatten(ctx context.Context, names ...string) (*Comm, error) {
	var dims []int
	for _, n := range names {
		i := slices.Index(m.names, n)
		if i < 0 || slices.Contains(dims, i) {
			return nil, m.c.opError(&Op{Name: OpSplit}, commerr.Invalid("cannot flatten %q: the mesh has dimensions %q, each flattened once", names, m.names))
		}
		dims = append(dims, i)
	}
	if len(dims) == 0 {
		return nil, m.c.opError(&Op{Name: OpSplit}, commerr.Invalid("flatten needs at least one dimension"))
	}
	if len(dims) == 1 {
		return m.dims[dims[0]], nil
	}
	key := strings.Join(names, "\x00")
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finalized {
		return nil, m.c.opError(&Op{Name: OpSplit}, ErrFinalized)
	}
	if f, ok := m.flat[key]; ok {
		return f, nil
	}
	f, err := m.split(ctx, dims)
	if err != nil {
		return nil, err
	}
	m.flat[key] = f
	return f, nil
}

// Shrink carries the mesh over the failure of some of its ranks, as
// torchft drops the replicas that lost a member: it shrinks the mesh's
// communicator (Comm.Shrink), drops every slice of the first dimension
// (dp in [dp tp]) that holds a failed rank, and returns the mesh of the
// rest, its first dimension that much smaller, its other dimensions and
// names the same. A rank of a dropped slice gets nil and no error: it is
// out of the mesh. The ranks that remain keep their order. Like
// Comm.Shrink, it works on a mesh whose communicator a failure broke; the
// old mesh stays broken: finalize it.
func (m *Mesh) Shrink(ctx context.Context, opts ...Option) (*Mesh, error) {
	s, err := m.c.Shrink(ctx, opts...)
	if err != nil {
		return nil, err
	}
	alive := s.Ranks()
	dropped := map[int]bool{}
	for r, g := range m.c.Ranks() {
		if !slices.Contains(alive, g) {
			dropped[coordsOf(r, m.shape)[0]] = true
		}
	}
	var group []int
	for sr, g := range alive {
		if !dropped[coordsOf(slices.Index(m.c.Ranks(), g), m.shape)[0]] {
			group = append(group, sr)
		}
	}
	if dropped[m.coords[0]] {
		group = nil
	}
	rest, err := s.Split(ctx, group, opts...)
	if err == nil && rest != nil {
		shape := slices.Clone(m.shape)
		shape[0] -= len(dropped)
		var next *Mesh
		if next, err = NewMesh(ctx, rest, shape, m.names, m.opts...); err == nil {
			next.parent = s
			return next, nil
		}
		err = errors.Join(err, rest.Finalize(context.WithoutCancel(ctx)))
	}
	return nil, errors.Join(err, s.Finalize(context.WithoutCancel(ctx)))
}

// Finalize finalizes the communicators the mesh made: its dimensions',
// Flatten's and, for a mesh Shrink made, the communicator it was made on
// and the shrunk one under it.
func (m *Mesh) Finalize(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finalized {
		return m.c.opError(&Op{Name: "finalize"}, ErrFinalized)
	}
	m.finalized = true
	var errs []error
	for _, d := range m.dims {
		if d != nil {
			errs = append(errs, d.Finalize(ctx))
		}
	}
	for _, f := range m.flat {
		errs = append(errs, f.Finalize(ctx))
	}
	if m.parent != nil {
		errs = append(errs, m.c.Finalize(ctx), m.parent.Finalize(ctx))
	}
	return errors.Join(errs...)
}
