package collective

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/internal/calls"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// A signature packs what every rank must agree on into the 64 bits every
// frame carries, so a receiver detects a mismatched call from the first
// frame instead of corrupting memory or hanging:
//
//	bits 56..63  kind (algorithms.Kind; 0 for point-to-point)
//	bits 48..55  dtype
//	bits 40..47  reduce kind (0 when none)
//	bits 20..39  root + 1 (0 when none), modulo 2^20
//	bits  0..19  the element count with bit 19 set, where every rank knows
//	             one count below 2^19 (all-reduce, broadcast, reduce), so
//	             that a mismatch can say it; else a hash of the counts
//	             every rank knows, bit 19 clear
const (
	sigCountBits = 20
	sigRootBits  = 20
	sigExact     = 1 << (sigCountBits - 1)
)

// Sig returns the signature of an operation. counts are the element counts
// that every rank passes identically (nil when ranks legitimately differ).
func Sig(kind algorithms.Kind, dt tensor.DType, op reduce.Kind, root int, counts []int) uint64 {
	h := fnv.New32a()
	var buf [8]byte
	for _, c := range counts {
		binary.LittleEndian.PutUint64(buf[:], uint64(c))
		h.Write(buf[:])
	}
	r := uint64(0)
	if root >= 0 {
		r = uint64(root+1) & (1<<sigRootBits - 1)
	}
	c := uint64(h.Sum32()) & (sigExact - 1)
	if len(counts) == 1 && counts[0] >= 0 && counts[0] < sigExact {
		c = sigExact | uint64(counts[0])
	}
	return uint64(kind)<<56 | uint64(dt)<<48 | uint64(op)<<40 | r<<sigCountBits | c
}

// Mismatch describes how the signature peer sent differs from that of
// rank, this one: "rank 0 called broadcast(root 0, 4 float32) where rank 1
// called all_reduce(sum, 4 float32)", naming both, as the words travel on
// to other ranks; it says so when the element counts differ where the
// signatures hold only a hash of them.
func Mismatch(theirs, ours uint64, peer, rank int) string {
	s := fmt.Sprintf("rank %d called %s where rank %d called %s", peer, describe(theirs), rank, describe(ours))
	if a, b := field(theirs, 0, sigCountBits), field(ours, 0, sigCountBits); a != b && (a&sigExact == 0 || b&sigExact == 0) {
		s += "; the element counts differ"
	}
	return s
}

// describe names the call a signature stands for, with its element count
// if the signature holds it.
func describe(sig uint64) string {
	var red string
	if op := reduce.Kind(field(sig, 40, 8)); op != 0 {
		red = op.String()
	}
	data := tensor.DType(field(sig, 48, 8)).String()
	if c := field(sig, 0, sigCountBits); c&sigExact != 0 {
		data = fmt.Sprintf("%d %s", c&^sigExact, data)
	}
	return calls.Describe(kindName(field(sig, 56, 8)), red, int(field(sig, sigCountBits, sigRootBits))-1, data)
}

func field(sig uint64, shift, bits uint) uint64 { return sig >> shift & (1<<bits - 1) }

func kindName(k uint64) string {
	if k == 0 {
		return "send/recv"
	}
	return algorithms.Kind(k).String()
}
