package window

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"pgregory.net/rapid"

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
		codes := []Code{Put, Get, Accumulate, GetAccumulate, FetchAndOp, CompareAndSwap, Signal}
		kinds := []reduce.Kind{reduce.Sum, reduce.Product, reduce.Min, reduce.Max, reduce.BXor}
		for range rapid.IntRange(1, 60).Draw(t, "ops") {
			code := rapid.SampledFrom(codes).Draw(t, "code")
			first := rapid.IntRange(0, words-1).Draw(t, "word")
			n := rapid.IntRange(0, words-first).Draw(t, "words")
			if code == FetchAndOp || code == CompareAndSwap {
				n = 1
			}
			if code == Signal {
				n = 0
			}
			r := request{Offset: uint64(8 * first), Len: uint64(8 * n), DType: tensor.Int64, Reduce: rapid.SampledFrom(kinds).Draw(t, "reduce")}
			if code == Signal || rapid.Bool().Draw(t, "signal") && code == Put {
				r.SignalOp = SignalOp(rapid.IntRange(1, 2).Draw(t, "signal_op"))
				r.Slot = uint32(rapid.IntRange(0, slots-1).Draw(t, "slot"))
				r.Value = rapid.Uint64Range(0, 5).Draw(t, "value")
			}
			operands := make([]int64, n)
			for i := range operands {
				operands[i] = rapid.Int64Range(-4, 4).Draw(t, "operand")
			}
			var data []byte
			switch code {
			case Put, Accumulate, GetAccumulate, FetchAndOp:
				data = int64Bytes(operands)
			case CompareAndSwap:
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
			case Put:
				copy(model[first:], operands)
			case Get:
				want = before
			case Accumulate, GetAccumulate, FetchAndOp:
				for i, v := range operands {
					model[first+i] = combine(r.Reduce, model[first+i], v)
				}
				if code != Accumulate {
					want = before
				}
			case CompareAndSwap:
				want = before
				if model[first] == int64(binary.LittleEndian.Uint64(data[8:])) {
					model[first] = operands[0]
				}
			}
			switch r.SignalOp {
			case SignalSet:
				modelSlots[r.Slot] = r.Value
			case SignalAdd:
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
		code Code
		r    request
	}{
		{Put, request{Offset: 60, Len: 8}},
		{Get, request{Offset: math.MaxUint64 - 3, Len: 8}},
		{Put, request{Offset: 0, Len: math.MaxUint64}},
		{Accumulate, request{Offset: 4, Len: 8, DType: tensor.Int64, Reduce: reduce.Sum}},
		{Accumulate, request{Offset: 0, Len: 4, DType: tensor.Int64, Reduce: reduce.Sum}},
		{Accumulate, request{Offset: 0, Len: 8, DType: tensor.Float64, Reduce: reduce.BXor}},
		{Accumulate, request{Offset: 0, Len: 8, DType: tensor.Float64, Reduce: reduce.Avg}},
		{FetchAndOp, request{Offset: 0, Len: 16, DType: tensor.Int64, Reduce: reduce.Sum}},
		{CompareAndSwap, request{Offset: 4, Len: 8}},
		{Signal, request{SignalOp: SignalAdd, Slot: 2}},
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
		checks := map[Cmp]bool{CmpEQ: d == 0, CmpNE: d != 0, CmpLT: d < 0, CmpLE: d <= 0, CmpGT: d > 0, CmpGE: d >= 0}
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
	for _, c := range []Code{Put, Get, Accumulate, FetchAndOp, CompareAndSwap, Signal, Flush} {
		p := make([]byte, requestSize+8)
		(&request{Offset: 8, Len: 8, DType: tensor.Int64, Reduce: reduce.Sum, SignalOp: SignalAdd, Slot: 1, Value: 1}).encode(p)
		f.Add(uint32(c), p)
	}
	f.Fuzz(func(t *testing.T, code uint32, payload []byte) {
		tgt := target{mem: make([]byte, 64), slots: make([]uint64, 2)}
		r, data, err := decodeRequest(Code(code), payload)
		if err != nil {
			return
		}
		if tgt.check(Code(code), &r) != nil {
			return
		}
		tgt.apply(Code(code), &r, data, nil)
		if _, err := decodeReply(payload); err == nil && len(payload) == 0 {
			t.Fatal("an empty reply decoded")
		}
	})
}
