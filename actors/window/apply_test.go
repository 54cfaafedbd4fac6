package window

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// TestApplyMatchesModel: any sequence of operations, each encoded as an
// origin would and decoded as a target does, leaves the window and the
// signal slots as a plain model of int64 words and counters says, and
// reads back what the model held.
func TestApplyMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const words, slots = 8, 3
		tgt := target{mem: make([]byte, 8*words), slots: make([]uint64, slots)}
		model := make([]int64, words)
		modelSlots := make([]uint64, slots)
		codes := []backend.WindowCode{backend.WindowPut, backend.WindowGet, backend.WindowAccumulate, backend.WindowGetAccumulate, backend.WindowFetchAndOp, backend.WindowCompareAndSwap, backend.WindowSignal}
		kinds := []reduce.Kind{reduce.Sum, reduce.Product, reduce.Min, reduce.Max, reduce.BXor}
		for range rapid.IntRange(1, 60).Draw(t, "ops") {
			code := rapid.SampledFrom(codes).Draw(t, "code")
			first := rapid.IntRange(0, words-1).Draw(t, "word")
			n := rapid.IntRange(0, words-first).Draw(t, "words")
			if code == backend.WindowFetchAndOp || code == backend.WindowCompareAndSwap {
				n = 1
			}
			if code == backend.WindowSignal {
				n = 0
			}
			r := request{Offset: uint64(8 * first), Len: uint64(8 * n), DType: tensor.Int64, Reduce: rapid.SampledFrom(kinds).Draw(t, "reduce")}
			if code == backend.WindowSignal || rapid.Bool().Draw(t, "signal") && code == backend.WindowPut {
				r.SignalOp = backend.SignalOp(rapid.IntRange(1, 2).Draw(t, "signal_op"))
				r.Slot = uint32(rapid.IntRange(0, slots-1).Draw(t, "slot"))
				r.Value = rapid.Uint64Range(0, 5).Draw(t, "value")
			}
			operands := make([]int64, n)
			for i := range operands {
				operands[i] = rapid.Int64Range(-4, 4).Draw(t, "operand")
			}
			var data []byte
			switch code {
			case backend.WindowPut, backend.WindowAccumulate, backend.WindowGetAccumulate, backend.WindowFetchAndOp:
				data = int64Bytes(operands)
			case backend.WindowCompareAndSwap:
				compare := model[first]
				if rapid.Bool().Draw(t, "mismatch") {
					compare++
				}
				data = int64Bytes([]int64{operands[0], compare})
			}
			payload := make([]byte, requestSize+len(data))
			r.encode(payload)
			copy(payload[requestSize:], data)
			got, gotData, err := decodeRequest(code, payload)
			if err != nil {
				t.Fatalf("%v: %v", code, err)
			}
			if err := tgt.check(code, &got); err != nil {
				t.Fatalf("%v: %v", code, err)
			}
			out := tgt.apply(code, &got, gotData, nil)

			// The model.
			before := int64Bytes(model[first : first+n])
			var want []byte
			switch code {
			case backend.WindowPut:
				copy(model[first:], operands)
			case backend.WindowGet:
				want = before
			case backend.WindowAccumulate, backend.WindowGetAccumulate, backend.WindowFetchAndOp:
				for i, v := range operands {
					model[first+i] = combine(r.Reduce, model[first+i], v)
				}
				if code != backend.WindowAccumulate {
					want = before
				}
			case backend.WindowCompareAndSwap:
				want = before
				if model[first] == int64(binary.LittleEndian.Uint64(data[8:])) {
					model[first] = operands[0]
				}
			}
			switch r.SignalOp {
			case backend.SignalSet:
				modelSlots[r.Slot] = r.Value
			case backend.SignalAdd:
				modelSlots[r.Slot] += r.Value
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("%v read back %v, want %v", code, out, want)
			}
			if !bytes.Equal(tgt.mem, int64Bytes(model)) {
				t.Fatalf("after %v the window is %v, the model %v", code, tgt.mem, model)
			}
			for i := range slots {
				if tgt.slots[i] != modelSlots[i] {
					t.Fatalf("after %v slot %d is %d, the model's %d", code, i, tgt.slots[i], modelSlots[i])
				}
			}
		}
	})
}

func combine(k reduce.Kind, a, b int64) int64 {
	switch k {
	case reduce.Sum:
		return a + b
	case reduce.Product:
		return a * b
	case reduce.Min:
		return min(a, b)
	case reduce.Max:
		return max(a, b)
	case reduce.BXor:
		return a ^ b
	}
	panic(k)
}

func int64Bytes(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// TestCheckRejects: operations outside the window, misaligned, or of a
// reduction the dtype lacks are refused before anything is applied.
func TestCheckRejects(t *testing.T) {
	tgt := target{mem: make([]byte, 64), slots: make([]uint64, 2)}
	cases := []struct {
		code backend.WindowCode
		r    request
	}{
		{backend.WindowPut, request{Offset: 60, Len: 8}},
		{backend.WindowGet, request{Offset: math.MaxUint64 - 3, Len: 8}},
		{backend.WindowPut, request{Offset: 0, Len: math.MaxUint64}},
		{backend.WindowAccumulate, request{Offset: 4, Len: 8, DType: tensor.Int64, Reduce: reduce.Sum}},
		{backend.WindowAccumulate, request{Offset: 0, Len: 4, DType: tensor.Int64, Reduce: reduce.Sum}},
		{backend.WindowAccumulate, request{Offset: 0, Len: 8, DType: tensor.Float64, Reduce: reduce.BXor}},
		{backend.WindowAccumulate, request{Offset: 0, Len: 8, DType: tensor.Float64, Reduce: reduce.Avg}},
		{backend.WindowFetchAndOp, request{Offset: 0, Len: 16, DType: tensor.Int64, Reduce: reduce.Sum}},
		{backend.WindowCompareAndSwap, request{Offset: 4, Len: 8}},
		{backend.WindowSignal, request{SignalOp: backend.SignalAdd, Slot: 2}},
	}
	for _, c := range cases {
		if err := tgt.check(c.code, &c.r); err == nil {
			t.Errorf("%v %+v was accepted", c.code, c.r)
		}
	}
}

// TestCmpRollsOver: the ordered comparisons hold across the wrap of a
// 64-bit counter, as long as the two are within half the range.
func TestCmpRollsOver(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := rapid.Uint64().Draw(t, "base")
		d := rapid.Int64Range(-1<<40, 1<<40).Draw(t, "distance")
		slot, v := base+uint64(d), base
		checks := map[backend.SignalCmp]bool{backend.SignalEQ: d == 0, backend.SignalNE: d != 0, backend.SignalLT: d < 0, backend.SignalLE: d <= 0, backend.SignalGT: d > 0, backend.SignalGE: d >= 0}
		for c, want := range checks {
			if got := holds(c, slot, v); got != want {
				t.Fatalf("%d %v %d (distance %d): %v, want %v", slot, c, v, d, got, want)
			}
		}
	})
}

// FuzzServe: whatever bytes arrive as an operation, decoding and checking
// them either refuses them or applies them within the window; nothing
// panics.
func FuzzServe(f *testing.F) {
	for _, c := range []backend.WindowCode{backend.WindowPut, backend.WindowGet, backend.WindowAccumulate, backend.WindowFetchAndOp, backend.WindowCompareAndSwap, backend.WindowSignal, backend.WindowFlush} {
		p := make([]byte, requestSize+8)
		(&request{Offset: 8, Len: 8, DType: tensor.Int64, Reduce: reduce.Sum, SignalOp: backend.SignalAdd, Slot: 1, Value: 1}).encode(p)
		f.Add(uint32(c), p)
	}
	f.Fuzz(func(t *testing.T, code uint32, payload []byte) {
		tgt := target{mem: make([]byte, 64), slots: make([]uint64, 2)}
		r, data, err := decodeRequest(backend.WindowCode(code), payload)
		if err != nil {
			return
		}
		if tgt.check(backend.WindowCode(code), &r) != nil {
			return
		}
		tgt.apply(backend.WindowCode(code), &r, data, nil)
		if _, err := decodeReply(payload); err == nil && len(payload) == 0 {
			t.Fatal("an empty reply decoded")
		}
	})
}
