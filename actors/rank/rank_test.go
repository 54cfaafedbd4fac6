package rank

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport"
)

// copySchedule copies Input block 0 into Output block 0, n elements: with
// blocks shorter than n, running it panics.
func copySchedule(n int) *algorithms.Schedule {
	b := algorithms.NewBuilder(0, 1)
	b.Layout(algorithms.Input, []int{n})
	b.Layout(algorithms.Output, []int{n})
	b.Copy(algorithms.Region{Buf: algorithms.Output, Len: n}, algorithms.Region{Buf: algorithms.Input, Len: n})
	return b.Build("copy")
}

// The collective actor runs operation after operation; one that panics
// fails its operation with an internal error, and the next runs on a new
// actor.
func TestOperationsOutliveACrashedRunner(t *testing.T) {
	rt := actors.NewRuntime(nil)
	defer rt.Shutdown()
	pid := Spawn(rt, Config{Comm: "t", Rank: 0, Size: 1,
		Connect: func(int) (transport.Conn, error) { return nil, errors.New("no peers") }})
	good, bad := copySchedule(2), copySchedule(4)
	var seq uint64
	run := func(s *algorithms.Schedule) error {
		in, out := []byte{1, 2}, []byte{0, 0}
		done := make(chan error, 1)
		rt.System().Root.Send(pid, &Submit{Req: &collective.Request{
			Comm: "t", Op: "copy", Seq: seq, Schedule: s, DType: tensor.Uint8, Size: 1, Timeout: time.Minute,
			In: [][]byte{in}, Out: [][]byte{out}, Completion: collective.Notify{OnEnd: func(err error) { done <- err }},
		}})
		seq++
		select {
		case err := <-done:
			if err == nil && (out[0] != 1 || out[1] != 2) {
				return errors.New("nothing copied")
			}
			return err
		case <-time.After(10 * time.Second):
			return errors.New("never ended")
		}
	}
	for i, s := range []*algorithms.Schedule{good, good, bad, good, good, bad, bad, good} {
		err := run(s)
		switch {
		case s == good && err != nil:
			t.Fatalf("operation %d: %v", i, err)
		case s == bad && (!errors.As(err, new(*commerr.OpError)) || !strings.Contains(err.Error(), "internal error")):
			t.Fatalf("operation %d over a crashing schedule: %v", i, err)
		}
	}
}

// TestStaleWordOfAFailure: word of a failed peer is stale to the
// transport once the communicator broke and the rank recorded that
// peer, and only then; other control frames, a malformed one and word of
// a peer not yet recorded still reach the rank.
func TestStaleWordOfAFailure(t *testing.T) {
	r := newRank(nil, Config{Rank: 0, Size: 32})
	word := func(peer int) (transport.Header, []byte) {
		return transport.Header{Kind: transport.Control, Tag: collective.ControlPeerFailed}, collective.EncodePeerFailed(peer, 1)
	}
	stale := func(peer int) bool { return r.stale(word(peer)) }

	r.failed = []int{17}
	r.publishSettled()
	if stale(17) {
		t.Fatal("word of rank 17 is stale before the communicator broke: it would break it")
	}
	r.sequencer.broken = errors.New("rank 17 failed")
	r.publishSettled()
	if !stale(17) || stale(5) {
		t.Fatalf("once broken: rank 17 stale %v (want true), rank 5 stale %v (want false)", stale(17), stale(5))
	}
	r.failed = []int{5, 17}
	r.publishSettled()
	if !stale(5) {
		t.Fatal("word of rank 5 is news after the rank recorded it")
	}
	h, payload := word(5)
	if h.Tag = collective.ControlRevoked; r.stale(h, payload) {
		t.Fatal("a revocation is stale")
	}
	if h, _ := word(5); r.stale(h, []byte{5}) {
		t.Fatal("a malformed report is stale: the rank would not log it")
	}
}
