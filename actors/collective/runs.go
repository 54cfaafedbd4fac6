package collective

import "github.com/gocomms/gocomms/algorithms"

// runs splits a lazy collective's steps with each peer into runs: steps
// with the peer, in schedule order, that fewer than runGap steps with
// other peers separate. Once a run's steps have all completed, and none
// of a later one's, the collective has no use for the peer's link until
// its next run: it lets go of the link if that run starts with a send of
// its own, which links the peer again, and keeps it if it only
// receives, so that the link goes on watching the peer it waits for.
// Rabenseifner's halving and doubling meet each peer twice, log2 p
// rounds apart: the link is let go of between.
type runs struct {
	runOf   []int32 // by step: its run, or -1 for a step with no peer
	left    []int32 // by run: its steps not complete
	peerOf  []int32 // by run: its peer, by index in Request.Peers
	after   []int32 // by run: the steps of its peer's later runs
	release []bool  // by run: the peer's next run sends
	pending []int32 // by peer index: its steps not complete
	scratch []int32
}

// runGap is how many steps with other peers, at least, part two runs
// with one peer: a ring's step with its left neighbour between two with
// its right one parts none.
const runGap = 4

// plan splits s's steps with the peers, indexed as peerIndex says, into
// runs, reusing rs's arrays.
func (rs *runs) plan(s *algorithms.Schedule, peers int, peerIndex func(int) int) {
	rs.runOf = resize(rs.runOf, len(s.Steps))
	rs.left, rs.peerOf, rs.after, rs.release = rs.left[:0], rs.peerOf[:0], rs.after[:0], rs.release[:0]
	rs.pending = resize(rs.pending, peers)
	// By peer: its latest run and the one before, +1 (0: none), and the
	// steps with peers up to its latest step.
	rs.scratch = resize(rs.scratch, 3*peers)
	current, previous, seen := rs.scratch[:peers], rs.scratch[peers:2*peers], rs.scratch[2*peers:]
	withPeers := int32(0)
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Peer < 0 {
			rs.runOf[i] = -1
			continue
		}
		withPeers++
		p := peerIndex(st.Peer)
		if current[p] == 0 || withPeers-seen[p]-1 >= runGap {
			previous[p] = current[p]
			rs.left = append(rs.left, 0)
			rs.peerOf = append(rs.peerOf, int32(p))
			rs.after = append(rs.after, 0)
			rs.release = append(rs.release, false)
			current[p] = int32(len(rs.left))
		}
		if st.Prim == algorithms.Send && previous[p] > 0 {
			rs.release[previous[p]-1] = true
		}
		seen[p] = withPeers
		r := current[p] - 1
		rs.runOf[i] = r
		rs.left[r]++
		rs.pending[p]++
	}
	// A run's later steps are its peer's pending ones past it.
	done := current
	clear(done)
	for r := range rs.left {
		p := rs.peerOf[r]
		done[p] += rs.left[r]
		rs.after[r] = rs.pending[p] - done[p]
	}
}

// complete records that step i completed, and reports whether the
// collective lets go of the link to its peer, by index, now: for good
// (final), with no step with the peer left, or until the peer's next run.
func (rs *runs) complete(i int) (p int, final, release bool) {
	r := rs.runOf[i]
	if r < 0 {
		return 0, false, false
	}
	p = int(rs.peerOf[r])
	rs.left[r]--
	rs.pending[p]--
	switch {
	case rs.pending[p] == 0:
		return p, true, true
	case rs.left[r] == 0 && rs.pending[p] == rs.after[r] && rs.release[r]:
		return p, false, true
	}
	return p, false, false
}
