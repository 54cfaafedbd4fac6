package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gocomms/gocomms/internal/ccompiler"
)

// headerVar names an nccl.h for TestHeaderValues to check against.
const headerVar = "GOCOMMS_NCCL_HEADER"

// TestHeaderValues compiles, where NCCL's published nccl.h is at hand, a
// C file that asserts gnc.h's values and sizes, and the Go side's data
// types and reduction operators, equal nccl.h's: the package declares
// them itself so as to build without the header. It looks for the
// header in $GOCOMMS_NCCL_HEADER, beside the NCCL Locate loads (a pip
// wheel's include directory), and in /usr/include and /usr/local/cuda;
// nccl.h includes CUDA's runtime headers, looked for likewise. No GPU is
// needed.
func TestHeaderValues(t *testing.T) {
	header := findHeader()
	if header == "" {
		t.Skipf("skip: no nccl.h found ($%s, beside the NCCL Locate finds, /usr/include, /usr/local/cuda/include)", headerVar)
	}
	cudaInclude := ""
	for _, dir := range []string{"/usr/local/cuda/include", "/usr/include", filepath.Join(filepath.Dir(filepath.Dir(header)), "..", "cuda_runtime", "include")} {
		if _, err := os.Stat(filepath.Join(dir, "cuda_runtime.h")); err == nil {
			cudaInclude = dir
			break
		}
	}
	if cudaInclude == "" {
		t.Skipf("skip: %s needs CUDA's cuda_runtime.h, found in none of /usr/local/cuda/include, /usr/include or the wheel's", header)
	}
	cc, err := ccompiler.Find()
	if err != nil {
		t.Skipf("skip: %v", err)
	}
	pairs := [][2]string{
		{"GNC_SUCCESS", "ncclSuccess"},
		{"GNC_INVALID_USAGE", "ncclInvalidUsage"},
		{"GNC_IN_PROGRESS", "ncclInProgress"},
		{"GNC_UNIQUE_ID_BYTES", "NCCL_UNIQUE_ID_BYTES"},
		{"GNC_SPLIT_NOCOLOR", "NCCL_SPLIT_NOCOLOR"},
		{"GNC_SCALAR_HOST_IMMEDIATE", "ncclScalarHostImmediate"},
		{"sizeof(gnc_unique_id)", "sizeof(ncclUniqueId)"},
		{"sizeof(gnc_result)", "sizeof(ncclResult_t)"},
		{"sizeof(int)", "sizeof(ncclDataType_t)"},
		{"sizeof(int)", "sizeof(ncclRedOp_t)"},
		{fmt.Sprint(ncclInt8), "ncclInt8"},
		{fmt.Sprint(ncclUint8), "ncclUint8"},
		{fmt.Sprint(ncclInt32), "ncclInt32"},
		{fmt.Sprint(ncclUint32), "ncclUint32"},
		{fmt.Sprint(ncclInt64), "ncclInt64"},
		{fmt.Sprint(ncclUint64), "ncclUint64"},
		{fmt.Sprint(ncclFloat16), "ncclFloat16"},
		{fmt.Sprint(ncclFloat32), "ncclFloat32"},
		{fmt.Sprint(ncclFloat64), "ncclFloat64"},
		{fmt.Sprint(ncclBfloat16), "ncclBfloat16"},
		{fmt.Sprint(ncclSum), "ncclSum"},
		{fmt.Sprint(ncclProd), "ncclProd"},
		{fmt.Sprint(ncclMax), "ncclMax"},
		{fmt.Sprint(ncclMin), "ncclMin"},
		{fmt.Sprint(ncclAvg), "ncclAvg"},
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	prelude := "#define _GNU_SOURCE\n#include <nccl.h>\n#include \"gnc.h\"\n"
	out, err := ccompiler.Equal(cc, prelude, pairs, filepath.Dir(header), cudaInclude, wd, filepath.Join(wd, "..", "internal", "dlib"))
	if err != nil {
		t.Fatalf("gnc.h or the Go constants disagree with %s: %v\n%s", header, err, out)
	}
	t.Logf("gnc.h and the Go constants match %s", header)
}

// findHeader returns the first nccl.h of $GOCOMMS_NCCL_HEADER, the
// include directory beside the NCCL Locate loads, /usr/include and
// /usr/local/cuda/include; "" where there is none.
func findHeader() string {
	candidates := []string{os.Getenv(headerVar)}
	if found, err := Locate(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(filepath.Dir(found.Path)), "include", "nccl.h"))
	}
	candidates = append(candidates, "/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h")
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}
