package devcomm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/gocomms/gocomms/gpu/cuda"
)

// DeviceGroup is the device half of a host's shared memory, whose host
// half is package nvl: the ranks of one host, each with a region of GPU
// memory that every other maps, so that one rank's streams copy and
// reduce straight from another's memory, and flag words in the regions
// through which the streams signal each other in stream order.
// Every rank is a process of its own, which maps the others' regions
// through CUDA IPC. Ranks that share a process share its context, whose
// synchronous calls (a free, a copy on the legacy stream) would wait for
// every rank's stream, and so for barriers its other ranks have yet to
// queue: they have no group.
//
// A region is the flag words, one per rank, then Buffer's bytes. Rank
// q's word in rank r's region holds the number of the latest barrier q
// reached; Barrier raises it in every peer's region and waits for every
// peer's in its own. The host only queues this work: a peer that never
// reaches the barrier stalls the stream, which its caller's timeout must
// catch.
type DeviceGroup struct {
	ctx         *cuda.Context
	rank, size  int
	bufferBytes int
	regions     []*cuda.DeviceMemory // by rank; this rank's is allocated, the others' opened
	opened      []bool               // regions[q] was opened: closed with the group
	buffers     *cuda.Table          // every rank's buffer, by rank, for Fold
	barriers    uint64               // barriers queued so far
	ops         []cuda.MemOp         // a barrier's, kept between barriers
}

// DeviceRecordSize is the length of the record NewDeviceGroup exchanges.
const DeviceRecordSize = 8 + deviceHandleSize

const deviceHandleSize = 68 // cuda.IPCHandle marshalled

// flagBytes is the region's head: room for the flag words of up to
// maxDeviceRanks ranks, a multiple of the 256 bytes a buffer's kernels
// want it aligned to.
const (
	maxDeviceRanks = 1024
	flagBytes      = 8 * maxDeviceRanks
)

// NewDeviceGroup allocates this rank's region, with bufferBytes for
// data, in ctx, and returns the group, to be opened, with this rank's
// record of DeviceRecordSize bytes, for every other rank.
func NewDeviceGroup(ctx *cuda.Context, rank, size, bufferBytes int) (*DeviceGroup, []byte, error) {
	if size < 1 || size > maxDeviceRanks || rank < 0 || rank >= size || bufferBytes < 0 {
		return nil, nil, fmt.Errorf("devcomm: a device group of rank %d of %d with %d bytes", rank, size, bufferBytes)
	}
	mine, err := ctx.Alloc(flagBytes + bufferBytes)
	if err != nil {
		return nil, nil, err
	}
	g := &DeviceGroup{ctx: ctx, rank: rank, size: size, bufferBytes: bufferBytes,
		regions: make([]*cuda.DeviceMemory, size), opened: make([]bool, size)}
	g.regions[rank] = mine
	if err := ctx.Memset(mine, 0, flagBytes, 0); err != nil {
		return nil, nil, errors.Join(err, g.Close())
	}
	h, err := mine.IPCHandle()
	if err != nil {
		return nil, nil, errors.Join(err, g.Close())
	}
	hb, _ := h.MarshalBinary()
	rec := make([]byte, DeviceRecordSize)
	binary.LittleEndian.PutUint64(rec, uint64(os.Getpid()))
	copy(rec[8:], hb)
	return g, rec, nil
}

// Open maps every peer's region, given every rank's record in rank
// order. The group is usable once every rank's Open succeeded.
func (g *DeviceGroup) Open(recs [][]byte) error { return g.open(recs) }

// open maps every peer's region from its record.
func (g *DeviceGroup) open(recs [][]byte) error {
	if len(recs) != g.size {
		return fmt.Errorf("devcomm: %d device records for %d ranks", len(recs), g.size)
	}
	for q, rec := range recs {
		if q == g.rank {
			continue
		}
		if len(rec) != DeviceRecordSize {
			return fmt.Errorf("devcomm: rank %d's device record is %d bytes, want %d", q, len(rec), DeviceRecordSize)
		}
		if int(binary.LittleEndian.Uint64(rec)) == os.Getpid() {
			return fmt.Errorf("devcomm: rank %d shares this process: ranks of a device group are processes of their own", q)
		}
		var h cuda.IPCHandle
		if err := h.UnmarshalBinary(rec[8:]); err != nil {
			return fmt.Errorf("devcomm: rank %d's device record: %w", q, err)
		}
		m, err := g.ctx.OpenIPC(h)
		if err != nil {
			return fmt.Errorf("devcomm: mapping rank %d's device memory: %w", q, err)
		}
		if m.Len() < flagBytes+g.bufferBytes {
			return errors.Join(fmt.Errorf("devcomm: rank %d's device region is %d bytes, want %d", q, m.Len(), flagBytes+g.bufferBytes), m.Close())
		}
		g.regions[q], g.opened[q] = m, true
	}
	if g.bufferBytes == 0 {
		return nil
	}
	buffers := make([]cuda.TableRange, g.size)
	for q, m := range g.regions {
		buffers[q] = cuda.TableRange{Mem: m, Off: flagBytes, Len: g.bufferBytes}
	}
	t, err := g.ctx.NewTable(buffers)
	if err != nil {
		return fmt.Errorf("devcomm: listing the ranks' device buffers: %w", err)
	}
	g.buffers = t
	return nil
}

// Buffer returns rank q's region and the offset of its data bytes in it.
func (g *DeviceGroup) Buffer(q int) (*cuda.DeviceMemory, int) { return g.regions[q], flagBytes }

// Buffers lists every rank's data bytes, by rank, for Stream.Fold; nil
// where the buffers are empty.
func (g *DeviceGroup) Buffers() *cuda.Table { return g.buffers }

// Rank is this rank's place in the group, Size the group's ranks.
func (g *DeviceGroup) Rank() int { return g.rank }
func (g *DeviceGroup) Size() int { return g.size }

// BufferBytes is the size of every rank's data bytes.
func (g *DeviceGroup) BufferBytes() int { return g.bufferBytes }

// Barrier queues on s a barrier among the group's ranks: work queued on
// s after it runs once every rank's stream has reached its barrier of
// the same number, and so has finished what it queued before that. Every
// rank must queue its barriers in the same order. Its writes and waits
// go to the driver in one batch.
func (g *DeviceGroup) Barrier(s *cuda.Stream) error {
	g.barriers++
	n := g.barriers
	if g.size == 1 {
		return nil
	}
	ops := g.ops[:0]
	for q := range g.size {
		if q != g.rank {
			ops = append(ops, cuda.MemOp{Mem: g.regions[q], Off: 8 * g.rank, Value: n})
		}
	}
	for q := range g.size {
		if q != g.rank {
			ops = append(ops, cuda.MemOp{Mem: g.regions[g.rank], Off: 8 * q, Value: n, Wait: true, Cond: cuda.WaitGEQ})
		}
	}
	g.ops = ops
	return s.MemOps(ops)
}

// Barriers returns how many barriers this rank has queued.
func (g *DeviceGroup) Barriers() uint64 { return g.barriers }

// Reached returns the number of the latest barrier each rank has
// reached, as this rank's flag words record it, its own being the
// number it queued. It reads them on s, which must not wait behind the
// group's barriers (a non-blocking stream does not), into pin, pinned
// memory of at least 8 bytes a rank, so that it answers while they
// stall.
func (g *DeviceGroup) Reached(s *cuda.Stream, pin []byte) ([]uint64, error) {
	if len(pin) < 8*g.size {
		return nil, fmt.Errorf("devcomm: %d bytes to read the flags of %d ranks", len(pin), g.size)
	}
	if err := s.CopyDtoH(pin[:8*g.size], g.regions[g.rank], 0); err != nil {
		return nil, err
	}
	if err := s.Synchronize(); err != nil {
		return nil, err
	}
	reached := make([]uint64, g.size)
	for q := range reached {
		reached[q] = binary.LittleEndian.Uint64(pin[8*q:])
	}
	reached[g.rank] = g.barriers
	return reached, nil
}

// Close unmaps the peers' regions and frees this rank's. Peers must have
// stopped using it: the caller closes the group once every rank's last
// barrier has passed.
func (g *DeviceGroup) Close() error {
	var errs []error
	if g.buffers != nil {
		errs = append(errs, g.buffers.Close())
	}
	for q, m := range g.regions {
		if m != nil && (q == g.rank || g.opened[q]) {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
