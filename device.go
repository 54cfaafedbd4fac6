package gocomms

import (
	"os"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/launcher"
)

// LocalCUDA returns the GPU a rank of a launched job uses by default, as
// torchcomms chooses it: its rank on the host (LOCAL_RANK, or what
// the launcher calls it) modulo the GPUs this process sees; GPU 0 where
// the launcher does not say. It fails where there is no GPU to use.
func LocalCUDA() (Device, error) {
	drv, err := cuda.Open()
	if err != nil {
		return Device{}, err
	}
	devs, err := drv.Devices()
	if err != nil {
		return Device{}, err
	}
	env, err := launcher.FromEnv(os.LookupEnv)
	if err != nil {
		return Device{}, commerr.Invalid("%v", err)
	}
	return CUDA(max(env.LocalRank, 0) % len(devs)), nil
}
