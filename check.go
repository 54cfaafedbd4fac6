package gocomms

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/internal/calls"
	"github.com/gocomms/gocomms/internal/spans"
)

// WithCollectiveChecks makes every collective first agree on what each
// rank called, as TORCH_DISTRIBUTED_DEBUG=DETAIL does for
// torch.distributed: an all-gather of a 72-byte fingerprint per rank
// (operation, dtype, reduction, root, counts, and for all-to-all a sum
// that tells whether what each rank sends is what its peers expect). A
// mismatch then fails the collective on every rank with one message that
// says which ranks called what, before any data moves. Without it, each
// rank that a mismatched peer sends to or hears from fails naming it, and
// a rank that only meets peers that agree with it completes with what its
// own call asks for. The check costs an all-gather per collective and
// makes the Async forms block until it is done; GOCOMMS_CHECK_COLLECTIVES=1
// or TORCH_DISTRIBUTED_DEBUG=DETAIL turn it on for every communicator.
// Communicators split from a checked one are checked too.
func WithCollectiveChecks() Option { return func(o *options) { o.checks = true } }

// fingerprint sizes: the description's bytes, then the canonical hash and
// the all-to-all sums, in int64 words.
const (
	printText  = 48
	printWords = printText/8 + 3
)

// checkCall all-gathers op's fingerprint and returns the mismatch it
// shows, the same on every rank, or nil when every rank called the same.
func (c *Comm) checkCall(ctx context.Context, op *Op) error {
	all, s, st, err := c.gatherInts(fingerprint(op, c.cfg.Rank))
	if err := c.internal(ctx, &s.Op, err, st); err != nil {
		return fmt.Errorf("the check of what every rank called: %w", err)
	}
	return compareFingerprints(all, c.cfg.Size)
}

// fingerprint is what rank must agree on about op: a description cut to
// printText bytes, a hash of the whole of it, and for all-to-all the sums
// of sent and expected counts (see sendSums).
func fingerprint(op *Op, rank int) []int64 {
	desc := describeCall(op)
	f := make([]int64, printWords)
	text := make([]byte, printText)
	copy(text, desc)
	if len(desc) > printText {
		copy(text[printText-3:], "...")
	}
	for i := range printText / 8 {
		f[i] = int64(binary.LittleEndian.Uint64(text[8*i:]))
	}
	h := fnv.New64a()
	h.Write([]byte(desc))
	f[printText/8] = int64(h.Sum64())
	f[printText/8+1], f[printText/8+2] = sendSums(rank, op.Send, op.Recv)
	return f
}

// describeCall names a call the way errors do: "broadcast(root 0, 4
// float32)", "all_gather_v(float32, counts [1 2 3])". All-to-all counts
// differ across ranks by design, so they are left to sendSums.
func describeCall(op *Op) string {
	var red string
	if op.Reduce.Valid() {
		red = op.Reduce.Kind().String()
	}
	data := op.DType.String()
	switch {
	case op.Kind == algorithms.AllToAll || len(op.Counts) == 0:
	case len(op.Counts) == 1:
		data = fmt.Sprintf("%d %s", op.Counts[0], op.DType)
	default:
		data = fmt.Sprintf("%s, counts %v", op.DType, op.Counts)
	}
	return calls.Describe(string(op.Name), red, op.Root, data)
}

// sendSums returns, over the pairs (rank, q), the wrapping sums of a hash
// of (rank, q, what rank sends q) and of (q, rank, what rank expects from
// q). Summed over every rank the two agree exactly when every count sent
// is the count its receiver expects, barring a 2^-64 collision, so a
// fixed-size fingerprint checks all-to-all-v's p^2 counts.
func sendSums(rank int, send, recv []int) (sent, expected int64) {
	for q := range send {
		sent += pairHash(rank, q, send[q])
	}
	for q := range recv {
		expected += pairHash(q, rank, recv[q])
	}
	return sent, expected
}

func pairHash(from, to, n int) int64 {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[:], uint64(from))
	binary.LittleEndian.PutUint64(b[8:], uint64(to))
	binary.LittleEndian.PutUint64(b[16:], uint64(n))
	h := fnv.New64a()
	h.Write(b[:])
	return int64(h.Sum64())
}

// compareFingerprints returns an ErrInvalidArgument listing the ranks
// that called each distinct operation, or nil if all agree.
func compareFingerprints(all []int64, size int) error {
	type call struct {
		text  string
		hash  int64
		ranks []int
	}
	var calls []*call
	var sent, expected int64
	for r := range size {
		f := all[r*printWords : (r+1)*printWords]
		sent += f[printText/8+1]
		expected += f[printText/8+2]
		i := slices.IndexFunc(calls, func(c *call) bool { return c.hash == f[printText/8] })
		if i < 0 {
			text := make([]byte, printText)
			for w := range printText / 8 {
				binary.LittleEndian.PutUint64(text[8*w:], uint64(f[w]))
			}
			calls = append(calls, &call{text: strings.TrimRight(string(text), "\x00"), hash: f[printText/8]})
			i = len(calls) - 1
		}
		calls[i].ranks = append(calls[i].ranks, r)
	}
	if len(calls) == 1 {
		if sent != expected {
			return commerr.Invalid("ranks called %s with split sizes that disagree: what some rank sends a peer is not what that peer expects from it", calls[0].text)
		}
		return nil
	}
	const shown = 4
	parts := make([]string, 0, shown+1)
	for i, c := range calls {
		if i == shown {
			parts = append(parts, fmt.Sprintf("%d other calls", len(calls)-shown))
			break
		}
		parts = append(parts, rankList(c.ranks)+" called "+c.text)
	}
	return commerr.Invalid("ranks called different collectives: %s", strings.Join(parts, "; "))
}

// rankList writes ranks as "rank 3" or "ranks 0-2, 5".
func rankList(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + strconv.Itoa(ranks[0])
	}
	return "ranks " + spans.Format(ranks, ", ")
}
