package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/devcomm"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/tensor"
)

// DeviceBufferVar sets the bytes of GPU memory each rank of a host lends
// its peers for collectives that run from each other's memory (nvl's
// device group); 0 stages every operation through host memory instead.
const DeviceBufferVar = "GOCOMMS_NVL_DEVICE_BUFFER"

// defaultDeviceBuffer holds a 256 MiB all-reduce in one window: six
// driver calls queue it (a copy in, two batches of barrier words, one
// kernel, a copy out, the end's event), where each further window takes
// five more. A communicator's ranks each lend that much; NCCL's buffers
// for the channels of a node of eight GPUs take as much or more.
const defaultDeviceBuffer = 256 << 20

// StageChunkVar sets the bytes of the pieces a large staged operation is
// cut into, so that one piece's copies overlap another's transfer
// between hosts; 0 stages operations whole.
const StageChunkVar = "GOCOMMS_STAGE_CHUNK"

// defaultStageChunk keeps a piece's copy across the bus, some hundreds of
// microseconds, long against the cost of a host operation.
const defaultStageChunk = 4 << 20

// newCUDA creates this rank of a communicator of tensors on a GPU: the
// host communicator that moves what is staged, the device group of the
// ranks of this host where they all are, and the backend that chooses.
func newCUDA(ctx context.Context, cfg *backend.Config) (backend.Backend, error) {
	dev, err := cuda.Shared(cfg.Device.Index)
	if err != nil {
		return nil, err
	}
	bufBytes, err := envBytes(DeviceBufferVar, defaultDeviceBuffer)
	if err != nil {
		return nil, err
	}
	chunk, err := envBytes(StageChunkVar, defaultStageChunk)
	if err != nil {
		return nil, err
	}
	hostCfg := *cfg
	hostCfg.Device = tensor.CPU
	host, err := New(ctx, &hostCfg)
	if err != nil {
		return nil, err
	}
	// The host's defaults (network, store) are the communicator's.
	cfg.Network, cfg.Store = hostCfg.Network, hostCfg.Store
	var group *devcomm.DeviceGroup
	if cfg.Size > 1 && bufBytes > 0 {
		if group, err = joinDeviceGroup(ctx, host, cfg, dev, bufBytes); err != nil {
			return nil, errors.Join(err, host.Finalize(ctx))
		}
	}
	b, err := devcomm.New(host, cfg.Device, dev, group, chunk)
	if err != nil {
		return nil, errors.Join(err, host.Finalize(ctx))
	}
	return b, nil
}

// envBytes reads a number of bytes from the variable name, def where it
// is unset.
func envBytes(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, commerr.Invalid("%s=%q is not a number of bytes", name, v)
	}
	return n, nil
}

// joinDeviceGroup makes the ranks' device group if they are processes of
// their own, all of this host, and every one maps every other's memory;
// nil otherwise, on every rank alike. Each rank takes part in both
// exchanges whatever befell it.
func joinDeviceGroup(ctx context.Context, host backend.Backend, cfg *backend.Config, dev *cuda.Context, bufBytes int) (*devcomm.DeviceGroup, error) {
	// A record: whether the rank has a region, its process and host, its
	// region.
	const head, hostBytes = 9, 64
	rec := make([]byte, head+hostBytes+devcomm.DeviceRecordSize)
	g, mine, err := devcomm.NewDeviceGroup(dev, cfg.Rank, cfg.Size, bufBytes)
	if err == nil && nvl.Host() != "" && len(nvl.Host()) <= hostBytes {
		rec[0] = 1
		binary.LittleEndian.PutUint64(rec[1:], uint64(os.Getpid()))
		copy(rec[head:], nvl.Host())
		copy(rec[head+hostBytes:], mine)
	}
	cfg.Logger.Debug("device group", "region", err)
	recs, xerr := allGather(ctx, host, cfg, rec)
	if xerr != nil {
		return nil, errors.Join(xerr, closeGroup(g))
	}
	pids := map[string]bool{}
	together := true
	for _, r := range recs {
		pid := string(r[1:head])
		together = together && r[0] == 1 && !pids[pid] && string(r[head:head+hostBytes]) == string(rec[head:head+hostBytes])
		pids[pid] = true
	}
	ok := []byte{0}
	if together {
		regions := make([][]byte, len(recs))
		for q, r := range recs {
			regions[q] = r[head+hostBytes:]
		}
		if err := g.Open(regions); err != nil {
			cfg.Logger.Warn("cannot map the device memory of this host's ranks: staging through host memory", "err", err)
		} else {
			ok[0] = 1
		}
	}
	oks, xerr := allGather(ctx, host, cfg, ok)
	if xerr != nil {
		return nil, errors.Join(xerr, closeGroup(g))
	}
	if !together || slices.ContainsFunc(oks, func(o []byte) bool { return o[0] == 0 }) {
		return nil, closeGroup(g)
	}
	return g, nil
}

func closeGroup(g *devcomm.DeviceGroup) error {
	if g == nil {
		return nil
	}
	return g.Close()
}

// allGather gathers one record of a length every rank shares over host,
// before the communicator has issued anything.
func allGather(ctx context.Context, host backend.Backend, cfg *backend.Config, mine []byte) ([][]byte, error) {
	n := len(mine)
	all := make([]byte, n*cfg.Size)
	outs := make([]*tensor.Tensor, cfg.Size)
	recs := make([][]byte, cfg.Size)
	for q := range outs {
		recs[q] = all[q*n : (q+1)*n]
		outs[q], _ = tensor.FromBytes(tensor.Uint8, recs[q])
	}
	in, _ := tensor.FromBytes(tensor.Uint8, mine)
	op := &backend.Op{
		Name: backend.OpAllGather, Kind: algorithms.AllGather, DType: tensor.Uint8, Root: -1,
		Counts: slices.Repeat([]int{n}, cfg.Size), Inputs: []*tensor.Tensor{in}, Outputs: outs,
		Timeout: cfg.Timeout,
	}
	done := make(doneChan, 1)
	host.Issue(op, done)
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("exchanging device memory: %w", err)
		}
		return recs, nil
	case <-ctx.Done():
		host.Abort(context.Cause(ctx))
		return nil, context.Cause(ctx)
	}
}

// doneChan is a Completion that hands its end to whoever waits.
type doneChan chan error

func (doneChan) Started()             {}
func (d doneChan) Finished(err error) { d <- err }
