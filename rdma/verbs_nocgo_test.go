//go:build !linux || !cgo

package rdma

// verbsLoadable says whether this build can load libibverbs at all: with
// cgo, on Linux.
const verbsLoadable = false
