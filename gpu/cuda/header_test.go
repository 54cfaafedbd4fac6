package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gocomms/gocomms/internal/ccompiler"
)

// TestHeaderValues compiles, where CUDA's cuda.h is installed, a C file
// that asserts gcu.h's values, the layout of its batch of stream memory
// operations, and the Go side's Result and WaitCond constants equal
// cuda.h's: the package declares them itself so as to
// build without the header, and this catches a typo in any of them.
func TestHeaderValues(t *testing.T) {
	const header = "/usr/include/cuda.h"
	if _, err := os.Stat(header); err != nil {
		t.Skipf("skip: no %s to check against", header)
	}
	cc, err := ccompiler.Find()
	if err != nil {
		t.Skipf("skip: %v", err)
	}
	pairs := [][2]string{
		{"GCU_SUCCESS", "CUDA_SUCCESS"},
		{"GCU_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_VALUE"},
		{"GCU_ERROR_NOT_READY", "CUDA_ERROR_NOT_READY"},
		{"GCU_ERROR_NOT_SUPPORTED", "CUDA_ERROR_NOT_SUPPORTED"},
		{"GCU_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"},
		{"GCU_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"},
		{"GCU_STREAM_DEFAULT", "CU_STREAM_DEFAULT"},
		{"GCU_STREAM_NON_BLOCKING", "CU_STREAM_NON_BLOCKING"},
		{"GCU_EVENT_DEFAULT", "CU_EVENT_DEFAULT"},
		{"GCU_EVENT_DISABLE_TIMING", "CU_EVENT_DISABLE_TIMING"},
		{"GCU_EVENT_INTERPROCESS", "CU_EVENT_INTERPROCESS"},
		{"GCU_IPC_HANDLE_SIZE", "CU_IPC_HANDLE_SIZE"},
		{"GCU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS", "CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS"},
		{"GCU_STREAM_WRITE_VALUE_DEFAULT", "CU_STREAM_WRITE_VALUE_DEFAULT"},
		{"GCU_STREAM_MEM_OP_WAIT_VALUE_64", "CU_STREAM_MEM_OP_WAIT_VALUE_64"},
		{"GCU_STREAM_MEM_OP_WRITE_VALUE_64", "CU_STREAM_MEM_OP_WRITE_VALUE_64"},
		{"sizeof(gcu_mem_op)", "sizeof(CUstreamBatchMemOpParams)"},
		{"offsetof(gcu_mem_op, value.address)", "offsetof(CUstreamBatchMemOpParams, waitValue.address)"},
		{"offsetof(gcu_mem_op, value.value64)", "offsetof(CUstreamBatchMemOpParams, waitValue.value64)"},
		{"offsetof(gcu_mem_op, value.flags)", "offsetof(CUstreamBatchMemOpParams, waitValue.flags)"},
		{"offsetof(gcu_mem_op, value.address)", "offsetof(CUstreamBatchMemOpParams, writeValue.address)"},
		{"offsetof(gcu_mem_op, value.value64)", "offsetof(CUstreamBatchMemOpParams, writeValue.value64)"},
		{"offsetof(gcu_mem_op, value.flags)", "offsetof(CUstreamBatchMemOpParams, writeValue.flags)"},
		{"sizeof(gcu_ipc_mem_handle)", "sizeof(CUipcMemHandle)"},
		{"sizeof(gcu_ipc_event_handle)", "sizeof(CUipcEventHandle)"},
		{"sizeof(gcu_deviceptr)", "sizeof(CUdeviceptr)"},
		{"sizeof(gcu_device)", "sizeof(CUdevice)"},
		{"sizeof(gcu_result)", "sizeof(CUresult)"},
		{fmt.Sprint(ipcHandleSize), "CU_IPC_HANDLE_SIZE"},
		{fmt.Sprint(uint32(WaitGEQ)), "CU_STREAM_WAIT_VALUE_GEQ"},
		{fmt.Sprint(uint32(WaitEQ)), "CU_STREAM_WAIT_VALUE_EQ"},
		{fmt.Sprint(uint32(WaitAnd)), "CU_STREAM_WAIT_VALUE_AND"},
		{fmt.Sprint(uint32(WaitNor)), "CU_STREAM_WAIT_VALUE_NOR"},
	}
	for code, name := range resultNames {
		pairs = append(pairs, [2]string{fmt.Sprint(int(code)), name})
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	prelude := "#include <stddef.h>\n#include <cuda.h>\n#include \"gcu.h\"\n"
	if out, err := ccompiler.Equal(cc, prelude, pairs, wd, filepath.Join(wd, "..", "..", "internal", "dlib")); err != nil {
		t.Fatalf("gcu.h or the Go constants disagree with %s: %v\n%s", header, err, out)
	}
}
