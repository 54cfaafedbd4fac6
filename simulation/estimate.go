package simulation

import (
	"math"

	"github.com/gocomms/gocomms/algorithms"
)

// Footprint is a run's shape as its memory goes, and the peak of live
// heap that shape comes to: what Estimate works out before a run, so that
// one that will not fit can be refused in seconds rather than killed
// after minutes.
type Footprint struct {
	Algorithm string  // the schedule every rank runs
	Links     float64 // peers a rank's schedule exchanges frames with, averaged over sampled ranks
	Steps     float64 // steps of a rank's schedule, likewise
	Data      int64   // bytes of the ranks' buffers, all of them: none with phantom data
	Bytes     int64   // the estimated peak of live heap
}

// What a rank costs in live heap: the communicator, its actors, its
// operation and the failure reports it keeps, which grow with the ranks
// (bytesPerDoubling for each doubling of them past freeDoublings); each
// link, with its actors, plane and connection ends; each step of its
// schedule, with what the executor keeps for it. Fitted to the peak live
// heap of the tree, Rabenseifner and recursive doubling at 16,384 and
// 100,000 ranks, the ring at 2,048 and the tree at 1,000,000, one crash
// each, within 6% of every one (docs/SIMULATION.md, "A run that will not
// fit").
const (
	bytesPerDoubling = 576
	freeDoublings    = 5.22
	bytesPerLink     = 1436
	bytesPerStep     = 98
)

// releasedLinks is what a rank costs, in links, when the ranks release
// theirs as their schedules leave each peer (Config.ReleaseLinks): the
// three or so it holds at once (its current peer's, and those of peers
// that reached it first: the most connections open at once, both ends
// counted, came to 2.8 to 3.1 a rank), and what making and releasing
// them keeps in flight. Fitted to the most live heap after a collection
// with a crash: 352 and 364 MB at 16,384 ranks of recursive doubling
// and Rabenseifner, 1,799 and 1,855 MB at 100,000.
const releasedLinks = 6

// sampledRanks is how many ranks' schedules Estimate builds: schedules
// differ between ranks (a tree's leaves from its inner ranks), and their
// mean is what the ranks hold together.
const sampledRanks = 16

// largeSchedule is a schedule's steps past which Estimate builds no more
// than rank 0's: a ring's are as many on every rank.
const largeSchedule = 1 << 16

// Estimate works out the footprint of c's run from its shape, building a
// few ranks' schedules and no rank, once c is valid (as Run checks). An
// agreement adds a link a rank to its coordinator and the coordinator's
// to every rank, windows a link to each neighbour, and a shrink after the
// agreement a second communicator, with the all-reduces' schedule.
func (c *Config) Estimate() (Footprint, error) {
	if err := c.validate(); err != nil {
		return Footprint{}, err
	}
	f := Footprint{}
	if !c.Phantom {
		f.Data = c.DataBytes()
	}
	switch {
	case c.Iterations == 0 && c.AfterShrink == 0:
		f.Algorithm = "none"
	case c.Op == PointToPoint:
		f.Algorithm, f.Links, f.Steps = "point_to_point", 2, 2
	default:
		d := dataset{cfg: c, elem: c.DType.Size()}
		n := min(c.Ranks, sampledRanks)
		var links, steps int
		for i := range n {
			s, err := algorithms.Build(planned(d.spec(i * c.Ranks / n)))
			if err != nil {
				return Footprint{}, err
			}
			f.Algorithm = s.Algorithm
			links += peers(s)
			steps += len(s.Steps)
			if len(s.Steps) > largeSchedule {
				n = i + 1
				break
			}
		}
		f.Links, f.Steps = float64(links)/float64(n), float64(steps)/float64(n)
	}
	if c.ReleaseLinks && !c.Faults.resets() { // a link that resumes is kept
		f.Links = min(f.Links, releasedLinks)
	}
	comms := 1.0
	if c.Agree {
		f.Links += 2
	}
	if c.Windows {
		f.Links += 2
	}
	if c.AfterShrink > 0 {
		comms = 2
	}
	perRank := comms*bytesPerDoubling*max(0, math.Log2(float64(c.Ranks))-freeDoublings) +
		f.Links*bytesPerLink + f.Steps*bytesPerStep
	f.Bytes = int64(perRank*float64(c.Ranks)) + f.Data
	return f, nil
}

// planned returns the spec the engine plans the collective of s by,
// which lays out the run's buffers: a broadcast's one buffer is no
// operation in place to the planner.
func planned(s algorithms.Spec) algorithms.Spec {
	if s.Kind == algorithms.Broadcast {
		s.InPlace = false
	}
	return s
}

// peers counts the ranks s exchanges frames with.
func peers(s *algorithms.Schedule) int {
	seen := map[int]bool{}
	for _, st := range s.Steps {
		if st.Peer >= 0 {
			seen[st.Peer] = true
		}
	}
	return len(seen)
}

// MostRanks is the largest number of ranks, with as many to a node as c
// has and c's run otherwise, whose estimate fits limit bytes of live
// heap: 0 if not even one node's does.
func (c *Config) MostRanks(limit int64) (int, error) {
	perNode, units := c.Ranks/c.Topology.Nodes, c.Topology.Nodes
	if units == 1 { // one node: its ranks scale
		perNode, units = 1, c.Ranks
	}
	fits := func(k int) (bool, error) {
		s := *c
		s.Ranks, s.Root = k*perNode, min(c.Root, k*perNode-1)
		if c.Topology.Nodes > 1 {
			s.Topology.Nodes = k
		}
		f, err := s.Estimate()
		return f.Bytes <= limit, err
	}
	lo, hi := 0, units // fits(lo), and not fits(hi+1)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo * perNode, nil
}
