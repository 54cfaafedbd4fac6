// Package reduce owns the reduction operators (Op) and the element-wise
// kernels that apply them to raw buffers. Every reducing collective
// (all-reduce, reduce, reduce-scatter) ends up in Combine and Finish.
//
// It must not allocate, communicate, or look at shapes: kernels see flat
// byte slices and a dtype, and callers (the algorithms) decide what to
// combine with what. It imports only the standard library, tensor, and
// golang.org/x/sys/cpu to know which vector kernels the CPU runs.
//
// A reduction over n contributions is n-1 Combine calls followed by one
// Finish call; Avg and PreMulSum combine as Sum and apply their division or
// scaling in Finish, so intermediate steps never lose precision to it.
//
// Start reading at op.go (what is defined for which dtype), then combine.go
// (dispatch and the semantics of each kernel). The loops themselves live in
// kernels_int.go and kernels_float.go, the portable reference; on amd64,
// vector_amd64.go and its assembly run Sum, Product, Min and Max of every
// numeric dtype with AVX2 (and F16C for float16), to the same bits.
// finish.go completes Avg and PreMulSum.
package reduce
