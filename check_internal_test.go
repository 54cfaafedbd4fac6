package gocomms

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/algorithms"
)

// TestSendSumsAgreeExactlyWhenCountsMatch: over every rank, the sums of
// what is sent and of what is expected agree when each rank expects from
// each peer what that peer sends it, and differ once one count differs.
func TestSendSumsAgreeExactlyWhenCountsMatch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 9).Draw(t, "ranks")
		send := make([][]int, n)
		for r := range send {
			send[r] = rapid.SliceOfN(rapid.IntRange(0, 1<<20), n, n).Draw(t, "send")
		}
		recv := make([][]int, n)
		for r := range recv {
			recv[r] = make([]int, n)
			for q := range recv[r] {
				recv[r][q] = send[q][r]
			}
		}
		total := func() (sent, expected int64) {
			for r := range n {
				s, e := sendSums(r, send[r], recv[r])
				sent, expected = sent+s, expected+e
			}
			return sent, expected
		}
		if s, e := total(); s != e {
			t.Fatalf("consistent counts, sums %x and %x", s, e)
		}
		r, q := rapid.IntRange(0, n-1).Draw(t, "rank"), rapid.IntRange(0, n-1).Draw(t, "peer")
		recv[r][q] += rapid.IntRange(1, 100).Draw(t, "off by")
		if s, e := total(); s == e {
			t.Fatalf("rank %d expects %d from rank %d, which sends %d, and the sums agree", r, recv[r][q], q, send[q][r])
		}
	})
}

// TestCompareFingerprints: identical calls pass; different ones fail on
// every rank with one message listing each call and its ranks.
func TestCompareFingerprints(t *testing.T) {
	call := func(name OpName, count, root int) *Op {
		return &Op{Name: name, Kind: algorithms.Broadcast, DType: Float32, Root: root, Counts: []int{count}}
	}
	gather := func(ops ...*Op) []int64 {
		var all []int64
		for r, op := range ops {
			all = append(all, fingerprint(op, r)...)
		}
		return all
	}
	same := call(OpBroadcast, 4, 0)
	if err := compareFingerprints(gather(same, same, same), 3); err != nil {
		t.Fatalf("identical calls: %v", err)
	}
	err := compareFingerprints(gather(same, same, call(OpBroadcast, 4, 1), same, same), 5)
	want := "ranks called different collectives: ranks 0-1, 3-4 called broadcast(root 0, 4 float32); rank 2 called broadcast(root 1, 4 float32)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}
