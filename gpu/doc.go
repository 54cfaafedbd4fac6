// Package gpu finds the NVIDIA GPUs of this host through NVML: each
// device's name, UUID, PCI bus, memory, compute capability and MIG mode,
// and where its NVLinks go.
//
//	devs, err := gpu.Devices()      // errors.Is(err, gpu.ErrUnavailable): no GPU here
//	for _, line := range gpu.Describe(devs) {
//		fmt.Println(line)            // one device and its NVLink peers by index
//	}
//
// NVML is loaded at run time from libnvidia-ml.so.1, which the NVIDIA
// driver installs, through github.com/NVIDIA/go-nvml; nothing is linked.
// That needs cgo and Linux, so nvml.go builds only with both, and
// elsewhere Devices says which of the two is missing. Every way of finding
// no GPU matches ErrUnavailable: built without cgo or off Linux, NVML not
// found (ErrNoLibrary), NVML unable to start, or no device (ErrNoDevice).
// A caller that can do without GPUs tests for ErrUnavailable alone.
//
// Devices opens NVML and shuts it down on every call, so it holds nothing
// between calls. Describe is a pure function of the devices it is given.
//
// This package must not choose devices for a rank, set
// CUDA_VISIBLE_DEVICES, or keep NVML open.
package gpu
