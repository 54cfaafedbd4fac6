package engine

import (
	"context"
	"errors"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/gpu/stage"
	"github.com/gocomms/gocomms/tensor"
)

// newCUDA creates this rank of a communicator of tensors on a GPU: the
// host communicator that moves their bytes, and the staging that copies
// them there and back on the device's streams.
func newCUDA(ctx context.Context, cfg *backend.Config) (backend.Backend, error) {
	dev, err := cuda.Shared(cfg.Device.Index)
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
	b, err := stage.New(host, cfg.Device, dev)
	if err != nil {
		return nil, errors.Join(err, host.Finalize(ctx))
	}
	return b, nil
}
