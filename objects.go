package gocomms

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"slices"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/engine"
)

// The object collectives move Go values, as torchcomms' objcol and
// torch.distributed's *_object functions move Python objects: each value
// is encoded with a Codec (encoding/gob unless ObjectCodec says
// otherwise), the sizes go first, then the bytes, and each rank decodes
// what it received. They run as the communicator's own operations, as a
// split's exchange does: hooks and the flight record do not see them, and
// on a GPU communicator the bytes are staged through the device.
//
// A value that fails to encode is an error on every rank, not a hang: the
// sizes carry a sentinel that tells every rank which peers failed. A
// failure to decode is agreed too, through one more small all-gather, so
// that every rank returns an error naming the ranks that failed. Only the
// point-to-point forms differ: a failure to decode is the receiver's
// alone.

// The names the object collectives' errors carry.
const (
	OpAllGatherObject OpName = "all_gather_object"
	OpBroadcastObject OpName = "broadcast_object"
	OpGatherObject    OpName = "gather_object"
	OpScatterObject   OpName = "scatter_object"
	OpSendObject      OpName = "send_object"
	OpRecvObject      OpName = "recv_object"
)

// Codec encodes values for the object collectives. Marshal is given a
// pointer to the value, Unmarshal a pointer to a zero value of its type.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// GobCodec encodes with encoding/gob, the default. As gob does, it drops
// func and chan fields, decodes empty slices and maps as nil, and needs
// gob.Register for the concrete types held in interface values.
var GobCodec Codec = gobCodec{}

type gobCodec struct{}

func (gobCodec) Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

func (gobCodec) Unmarshal(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}

// ObjectOption configures an object collective.
type ObjectOption func(*objectConfig)

type objectConfig struct{ codec Codec }

// ObjectCodec encodes the values with codec instead of GobCodec; every
// rank must use the same.
func ObjectCodec(codec Codec) ObjectOption { return func(o *objectConfig) { o.codec = codec } }

func objectConfigOf(opts []ObjectOption) objectConfig {
	cfg := objectConfig{codec: GobCodec}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.codec == nil {
		cfg.codec = GobCodec
	}
	return cfg
}

func encode[T any](cfg objectConfig, v T) ([]byte, error) {
	b, err := cfg.codec.Marshal(&v)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding a %T: %v", ErrInvalidArgument, v, err)
	}
	return b, nil
}

func decode[T any](cfg objectConfig, b []byte) (T, error) {
	var v T
	if err := cfg.codec.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%w: decoding a %T: %v", ErrInvalidArgument, v, err)
	}
	return v, nil
}

// unencodable is the size a rank sends for a value it could not encode.
const unencodable = -1

// maxObjectBytes bounds the encoded size of a value a peer announces, so
// that a corrupt or hostile size fails the call instead of the process
// allocating it; encoding/gob refuses messages of more than 1 GiB itself.
const maxObjectBytes = 1 << 32

// checkSize returns an error if n, the size rank announced for the bytes
// it is about to send, is not one this rank may allocate (unencodable
// neither: callers look for it first).
func checkSize(rank int, n int64) error {
	if n >= 0 && n <= maxObjectBytes {
		return nil
	}
	return commerr.Invalid("rank %d announced %d bytes (at most %d)", rank, n, int64(maxObjectBytes))
}

// encodeEverywhere encodes v and gathers every rank's encoded size, so
// that a value one rank cannot encode fails the operation on all.
func encodeEverywhere[T any](ctx context.Context, c *Comm, cfg objectConfig, name OpName, v T) ([]byte, []int64, error) {
	b, encErr := encode(cfg, v)
	size := int64(len(b))
	if encErr != nil {
		size = unencodable
	}
	sizes, err := c.objectInts(ctx, []int64{size})
	if err != nil {
		return nil, nil, c.objectError(name, err)
	}
	if err := c.encoded(name, sizes, encErr); err != nil {
		return nil, nil, err
	}
	return b, sizes, nil
}

// AllGatherObject returns every rank's v, indexed by rank, on every rank.
func AllGatherObject[T any](ctx context.Context, c *Comm, v T, opts ...ObjectOption) ([]T, error) {
	cfg := objectConfigOf(opts)
	b, sizes, err := encodeEverywhere(ctx, c, cfg, OpAllGatherObject, v)
	if err != nil {
		return nil, err
	}
	strs, s, st, err := c.gatherStrings(sizes, b)
	if err := c.internal(ctx, &s.Op, err, st); err != nil {
		return nil, c.objectError(OpAllGatherObject, err)
	}
	out := make([]T, len(strs))
	var decErr error
	for q, p := range strs {
		if out[q], decErr = decode[T](cfg, p); decErr != nil {
			decErr = fmt.Errorf("rank %d's value: %w", q, decErr)
			break
		}
	}
	if err := c.decoded(ctx, OpAllGatherObject, decErr); err != nil {
		return nil, err
	}
	return out, nil
}

// BroadcastObject returns root's v on every rank; the others' v are not
// read. Root gets its v back as it is, the others a decoded copy.
func BroadcastObject[T any](ctx context.Context, c *Comm, v T, root int, opts ...ObjectOption) (T, error) {
	var zero T
	cfg := objectConfigOf(opts)
	var b []byte
	var encErr error
	head := []int64{0}
	if c.Rank() == root {
		if b, encErr = encode(cfg, v); encErr != nil {
			head[0] = unencodable
		} else {
			head[0] = int64(len(b))
		}
	}
	if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
		return c.broadcast(s, st.of(FromSlice(head), c.Rank() != root), root)
	}); err != nil {
		return zero, c.objectError(OpBroadcastObject, err)
	}
	if head[0] == unencodable {
		if encErr != nil {
			return zero, c.opError(&Op{Name: OpBroadcastObject}, encErr)
		}
		return zero, c.opError(&Op{Name: OpBroadcastObject}, commerr.Invalid("root %d could not encode its value", root))
	}
	if err := checkSize(root, head[0]); err != nil {
		return zero, c.opError(&Op{Name: OpBroadcastObject}, err)
	}
	if c.Rank() != root {
		b = make([]byte, head[0])
	}
	if len(b) > 0 {
		if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
			return c.broadcast(s, st.of(FromSlice(b), c.Rank() != root), root)
		}); err != nil {
			return zero, c.objectError(OpBroadcastObject, err)
		}
	}
	out, decErr := v, error(nil)
	if c.Rank() != root {
		out, decErr = decode[T](cfg, b)
	}
	if err := c.decoded(ctx, OpBroadcastObject, decErr); err != nil {
		return zero, err
	}
	return out, nil
}

// GatherObject returns every rank's v, indexed by rank, on root, and nil
// on the others.
func GatherObject[T any](ctx context.Context, c *Comm, v T, root int, opts ...ObjectOption) ([]T, error) {
	cfg := objectConfigOf(opts)
	if err := c.checkRank("root", root); err != nil {
		return nil, c.opError(&Op{Name: OpGatherObject}, err)
	}
	b, sizes, err := encodeEverywhere(ctx, c, cfg, OpGatherObject, v)
	if err != nil {
		return nil, err
	}
	// Gather moves equal counts: every value is padded to the largest.
	width := int(slices.Max(sizes))
	var bufs [][]byte
	if c.Rank() == root {
		bufs = make([][]byte, c.Size())
		for q := range bufs {
			bufs[q] = make([]byte, width)
		}
	}
	if width > 0 {
		if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
			var outs []*Tensor
			for _, p := range bufs {
				outs = append(outs, st.of(FromSlice(p), true))
			}
			return c.gather(s, outs, st.of(FromSlice(padded(b, width)), false), root)
		}); err != nil {
			return nil, c.objectError(OpGatherObject, err)
		}
	}
	var out []T
	var decErr error
	if c.Rank() == root {
		out = make([]T, c.Size())
		for q, p := range bufs {
			if out[q], decErr = decode[T](cfg, p[:sizes[q]]); decErr != nil {
				decErr = fmt.Errorf("rank %d's value: %w", q, decErr)
				break
			}
		}
	}
	if err := c.decoded(ctx, OpGatherObject, decErr); err != nil {
		return nil, err
	}
	return out, nil
}

// ScatterObject returns root's vs[rank] on every rank; vs, one value per
// rank, is read on root only.
func ScatterObject[T any](ctx context.Context, c *Comm, vs []T, root int, opts ...ObjectOption) (T, error) {
	var zero T
	cfg := objectConfigOf(opts)
	if err := c.checkRank("root", root); err != nil {
		return zero, c.opError(&Op{Name: OpScatterObject}, err)
	}
	sizes := make([]int64, c.Size())
	var bufs [][]byte
	var encErr error
	if c.Rank() == root {
		bufs, encErr = encodeEach(cfg, vs, c.Size())
		for q, p := range bufs {
			sizes[q] = int64(len(p))
		}
		if encErr != nil {
			sizes[0] = unencodable
		}
	}
	if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
		return c.broadcast(s, st.of(FromSlice(sizes), c.Rank() != root), root)
	}); err != nil {
		return zero, c.objectError(OpScatterObject, err)
	}
	if sizes[0] == unencodable {
		if encErr != nil {
			return zero, c.opError(&Op{Name: OpScatterObject}, encErr)
		}
		return zero, c.opError(&Op{Name: OpScatterObject}, commerr.Invalid("root %d could not encode its values", root))
	}
	for _, n := range sizes {
		if err := checkSize(root, n); err != nil {
			return zero, c.opError(&Op{Name: OpScatterObject}, err)
		}
	}
	width := int(slices.Max(sizes))
	mine := make([]byte, width)
	if width > 0 {
		if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
			var ins []*Tensor
			for _, p := range bufs {
				ins = append(ins, st.of(FromSlice(padded(p, width)), false))
			}
			return c.scatter(s, st.of(FromSlice(mine), true), ins, root)
		}); err != nil {
			return zero, c.objectError(OpScatterObject, err)
		}
	}
	out, decErr := decode[T](cfg, mine[:sizes[c.Rank()]])
	if err := c.decoded(ctx, OpScatterObject, decErr); err != nil {
		return zero, err
	}
	return out, nil
}

// encodeEach encodes vs, which must hold n values.
func encodeEach[T any](cfg objectConfig, vs []T, n int) ([][]byte, error) {
	if len(vs) != n {
		return nil, commerr.Invalid("%d values for %d ranks", len(vs), n)
	}
	bufs := make([][]byte, n)
	for q, v := range vs {
		b, err := encode(cfg, v)
		if err != nil {
			return nil, fmt.Errorf("the value for rank %d: %w", q, err)
		}
		bufs[q] = b
	}
	return bufs, nil
}

// SendObject sends v to rank dst, which receives it with RecvObject. A
// value that fails to encode fails here and, through the size sent in its
// place, in dst's RecvObject. The size and the bytes are separate
// messages: objects between the same two ranks must not be sent from
// several goroutines at once. The bytes go in messages the engine sends
// eagerly (engine.EagerMax), so that SendObject never waits for dst: a
// ring of objects, each rank sending before it receives, goes through.
func SendObject[T any](ctx context.Context, c *Comm, v T, dst int, opts ...ObjectOption) error {
	cfg := objectConfigOf(opts)
	b, encErr := encode(cfg, v)
	head := []int64{int64(len(b))}
	if encErr != nil {
		head[0] = unencodable
	}
	if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
		return c.p2p(s, OpSend, true, st.of(FromSlice(head), false), dst, nil)
	}); err != nil {
		return c.objectError(OpSendObject, err)
	}
	if encErr != nil {
		return c.opError(&Op{Name: OpSendObject}, encErr)
	}
	for chunk := range slices.Chunk(b, engine.EagerMax) {
		if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
			return c.p2p(s, OpSend, true, st.of(FromSlice(chunk), false), dst, nil)
		}); err != nil {
			return c.objectError(OpSendObject, err)
		}
	}
	return nil
}

// RecvObject receives the value rank src sent with SendObject.
func RecvObject[T any](ctx context.Context, c *Comm, src int, opts ...ObjectOption) (T, error) {
	var zero T
	cfg := objectConfigOf(opts)
	head := []int64{0}
	if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
		return c.p2p(s, OpRecv, false, st.of(FromSlice(head), true), src, nil)
	}); err != nil {
		return zero, c.objectError(OpRecvObject, err)
	}
	if head[0] == unencodable {
		return zero, c.opError(&Op{Name: OpRecvObject}, commerr.Invalid("rank %d could not encode its value", src))
	}
	if err := checkSize(src, head[0]); err != nil {
		return zero, c.opError(&Op{Name: OpRecvObject}, err)
	}
	b := make([]byte, head[0])
	for chunk := range slices.Chunk(b, engine.EagerMax) {
		if err := c.hostOp(ctx, func(s *roomOp, st *hostStage) error {
			return c.p2p(s, OpRecv, false, st.of(FromSlice(chunk), true), src, nil)
		}); err != nil {
			return zero, c.objectError(OpRecvObject, err)
		}
	}
	v, err := decode[T](cfg, b)
	if err != nil {
		return zero, c.opError(&Op{Name: OpRecvObject}, fmt.Errorf("rank %d's value: %w", src, err))
	}
	return v, nil
}

// padded is b extended with zeros to width bytes.
func padded(b []byte, width int) []byte {
	if len(b) == width {
		return b
	}
	return append(b[:len(b):len(b)], make([]byte, width-len(b))...)
}

// hostOp runs an operation the communicator issues for itself, which
// build lays out over host tensors through st: on a GPU they are staged
// through the device, whose operations take only its tensors.
func (c *Comm) hostOp(ctx context.Context, build func(s *roomOp, st *hostStage) error) error {
	st := c.hostStage()
	s := new(roomOp)
	err := build(s, st)
	return c.internal(ctx, &s.Op, err, st)
}

// objectInts all-gathers the same number of int64s from every rank.
func (c *Comm) objectInts(ctx context.Context, mine []int64) ([]int64, error) {
	out, s, st, err := c.gatherInts(mine)
	if err := c.internal(ctx, &s.Op, err, st); err != nil {
		return nil, err
	}
	return out, nil
}

// encoded turns the all-gathered sizes into the error every rank returns
// when some rank could not encode its value; mine is this rank's reason.
func (c *Comm) encoded(name OpName, sizes []int64, mine error) error {
	var bad []int
	for q, n := range sizes {
		if n == unencodable {
			bad = append(bad, q)
		} else if err := checkSize(q, n); err != nil {
			return c.opError(&Op{Name: name}, err)
		}
	}
	switch {
	case mine != nil:
		return c.opError(&Op{Name: name}, mine)
	case bad != nil:
		return c.opError(&Op{Name: name}, commerr.Invalid("ranks %v could not encode their values", bad))
	}
	return nil
}

// decoded agrees on whether every rank decoded what it received, so that
// all return an error when one could not; mine is this rank's failure.
func (c *Comm) decoded(ctx context.Context, name OpName, mine error) error {
	flag := []int64{0}
	if mine != nil {
		flag[0] = 1
	}
	flags, err := c.objectInts(ctx, flag)
	if err != nil {
		return c.objectError(name, errors.Join(mine, err))
	}
	var bad []int
	for q, f := range flags {
		if f != 0 {
			bad = append(bad, q)
		}
	}
	switch {
	case mine != nil:
		return c.opError(&Op{Name: name}, mine)
	case bad != nil:
		return c.opError(&Op{Name: name}, commerr.Invalid("ranks %v could not decode the values they received", bad))
	}
	return nil
}

// objectError names the object collective whose inner operation failed
// with err.
func (c *Comm) objectError(name OpName, err error) error {
	var oe *OpError
	if errors.As(err, &oe) {
		return fmt.Errorf("gocomms: %s on %q: %w", name, c.cfg.Name, err)
	}
	return c.opError(&Op{Name: name}, err)
}
