//go:build !amd64

package reduce

import "github.com/gocomms/gocomms/tensor"

// vectorized has no kernels off amd64: the portable loops run.
func vectorized(Kind, tensor.DType, []byte, []byte, []byte) bool { return false }
