package engine

import (
	"encoding/binary"
	"testing"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

func word(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

// TestApplyDirect applies each direct operation to a window's memory.
func TestApplyDirect(t *testing.T) {
	mem := make([]byte, 32)
	ApplyDirect(mem, &backend.WindowOp{Code: backend.WindowPut, Offset: 8, Len: 8, Data: word(5)})
	got := make([]byte, 8)
	ApplyDirect(mem, &backend.WindowOp{Code: backend.WindowGet, Offset: 8, Len: 8, Result: got})
	if v := binary.NativeEndian.Uint64(got); v != 5 {
		t.Fatalf("get after put: %d, want 5", v)
	}
	old := make([]byte, 8)
	ApplyDirect(mem, &backend.WindowOp{Code: backend.WindowFetchAndOp, Offset: 8, Len: 8, DType: tensor.Int64, Reduce: reduce.Sum, Data: word(3), Result: old})
	if o, v := binary.NativeEndian.Uint64(old), binary.NativeEndian.Uint64(mem[8:]); o != 5 || v != 8 {
		t.Fatalf("fetch-and-add 3: fetched %d, holds %d; want 5, 8", o, v)
	}
	for _, c := range []struct{ compare, fetched, holds uint64 }{{7, 8, 8}, {8, 8, 9}} {
		ApplyDirect(mem, &backend.WindowOp{Code: backend.WindowCompareAndSwap, Offset: 8, Len: 8, DType: tensor.Int64, Data: append(word(9), word(c.compare)...), Result: old})
		if o, v := binary.NativeEndian.Uint64(old), binary.NativeEndian.Uint64(mem[8:]); o != c.fetched || v != c.holds {
			t.Fatalf("swap 9 if %d: fetched %d, holds %d; want %d, %d", c.compare, o, v, c.fetched, c.holds)
		}
	}
}
