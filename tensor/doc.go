// Package tensor owns the data model every collective moves around: element
// types (DType), the two 16-bit float formats (Float16, BFloat16), devices
// (Device) and the Tensor itself, a contiguous buffer plus dtype, shape and
// device.
//
// The package deliberately stays small. It must not know about
// communicators, transports, reductions or wire formats, and it imports only
// the standard library, so every other gocomms package can depend on it.
// Element bytes are in the machine's native byte order; converting to a wire
// order is the transport's job.
//
// Views are the point: FromSlice, FromBytes, As, Reshape and Narrow never
// copy, so a collective can read and write the caller's memory in place.
// Clone is the only deep copy.
//
// Start reading at dtype.go (DType), then tensor.go (Tensor and its views).
// half.go holds the float16/bfloat16 conversions and access.go the slow,
// index-based element accessors meant for tests, references and demos.
package tensor
