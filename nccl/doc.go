// Package nccl is a gocomms backend that runs a communicator's operations
// on NVIDIA's NCCL, registered as "nccl":
//
//	import _ "github.com/gocomms/gocomms/nccl"
//
//	c, err := gocomms.NewComm(ctx, "nccl", tensor.CUDA(i), name,
//		gocomms.WithRank(r), gocomms.WithSize(n), gocomms.WithStore(st))
//
// libnccl.so.2 is loaded at run time (dlopen, through cgo), so the module
// builds without NCCL or its header. Locate finds it: at the file
// $GOCOMMS_NCCL_LIBRARY (or $NCCL_LIBRARY) names, else on the loader's
// search path, else where pip's nvidia-nccl-cu12 wheel puts it in a
// Python installation's site-packages, which the loader does not search.
// Where none loads, New fails with an error matching ErrUnavailable that
// lists where it looked and why each failed. Tensors live in
// the device memory of gpu/cuda's shared context of the device, the one
// the caller's tensors and streams belong to.
//
// Rank 0 makes NCCL's unique id and passes it through the store under a
// key of the communicator's name; every rank then joins with
// ncclCommInitRank. Each operation is issued on the communicator's own
// stream, after the work queued on the caller's stream (gocomms.OnStream)
// through an event, and ends with an event recorded after it, which
// Work.WaitStream hands to the caller's stream. A goroutine issues the
// operations in order (an NCCL call may block, Issue may not); another
// finishes them as their events complete, and polls
// ncclCommGetAsyncError.
//
// Operations map to NCCL as follows; every call of an operation is made
// in one ncclGroupStart/ncclGroupEnd:
//
//	all_reduce, reduce, broadcast   ncclAllReduce, ncclReduce, ncclBroadcast
//	all_gather(_single)             ncclAllGather where the outputs are one buffer,
//	                                else (and _v) a broadcast from each rank
//	reduce_scatter(_single)         ncclReduceScatter where the inputs are one buffer,
//	                                else (and _v) a reduce to each rank
//	all_to_all(_single, _v_single)  ncclSend and ncclRecv with every rank
//	gather, scatter                 ncclSend and ncclRecv with the root
//	send, recv, batch_op_issue      ncclSend and ncclRecv, matched in order per peer
//	barrier                         ncclAllReduce of one byte
//	split                           ncclCommSplit
//
// Reductions take int8, uint8, int32, uint32, int64, uint64, float16,
// bfloat16, float32 and float64, with sum, product, min, max, avg
// (ncclAvg) and premul_sum (ncclRedOpCreatePreMulSum, the factor on the
// host); other dtypes, and the bitwise reductions, which NCCL lacks, fail
// with ErrUnsupported. Operations that only move data move bytes, so any
// dtype suits them. Calls of no elements are skipped on every rank alike.
//
// NCCL cannot withdraw an operation: a timeout, a cancellation or an
// asynchronous error aborts the communicator (ncclCommAbort), and fails
// its operations and every later one. Tags of point-to-point messages are
// ignored, as NCCL has none. Custom schedules, agreement, shrinking,
// revocation and reconfiguration fail with ErrUnsupported: NCCL runs its
// own algorithms, and its communicators have fixed members.
//
// NCCL takes one rank of a communicator per GPU: two on one GPU fail
// ncclCommInitRank with ncclInvalidUsage ("Duplicate GPU detected"). The
// TestDevice tests run so: each rank in a process of its own, on its own
// device, sharing a tcpstore; a test of more ranks than GPUs skips.
// TestFake runs them against a fake NCCL (testdata/fakenccl.c) and CUDA
// driver, whose ranks meet across processes and which refuses what NCCL
// refuses, with NCCL's result codes.
package nccl
