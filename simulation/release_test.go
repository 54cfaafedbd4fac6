package simulation

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
	"pgregory.net/rapid"
)

// TestReleasedLinksBehaveAsKept runs every collective on ranks that
// release their links (Config.ReleaseLinks), three times in a row, so
// that each operation after the first makes its links anew: every
// output must match the plain loop, as with links kept.
func TestReleasedLinksBehaveAsKept(t *testing.T) {
	for _, op := range ops {
		for _, ranks := range []int{1, 2, 3, 5, 8, 13} {
			for _, count := range []int{0, 1, ranks - 1, 1000} {
				cfg := config(op, ranks, count, uint64(ranks*1000+count))
				cfg.Iterations, cfg.ReleaseLinks = 3, true
				res := mustRun(t, cfg)
				if !res.OK() {
					t.Errorf("%v, %d ranks, %d elements: %v", op, ranks, count, res.Violations)
				}
				for r, o := range res.Ranks {
					if o.Completed != cfg.Iterations {
						t.Errorf("%v, %d ranks, %d elements: rank %d completed %d of %d", op, ranks, count, r, o.Completed, cfg.Iterations)
					}
				}
			}
		}
	}
}

// TestReleasedLinksEverySchedule runs each all-reduce schedule, whose
// peers differ in number and in order, on released links.
func TestReleasedLinksEverySchedule(t *testing.T) {
	for _, algo := range []string{"ring", "recursive_doubling", "rabenseifner", "double_binary_tree"} {
		for _, ranks := range []int{2, 7, 16, 33} {
			cfg := config(algorithms.AllReduce, ranks, 4096, uint64(ranks))
			cfg.Algorithm, cfg.Iterations, cfg.ReleaseLinks = algo, 3, true
			cfg.Topology = DGXH100(1)
			res := mustRun(t, cfg)
			if !res.OK() {
				t.Errorf("%s on %d ranks: %v", algo, ranks, res.Violations)
			}
			for r, o := range res.Ranks {
				if o.Completed != cfg.Iterations {
					t.Errorf("%s on %d ranks: rank %d completed %d of %d", algo, ranks, r, o.Completed, cfg.Iterations)
				}
			}
		}
	}
}

// TestReleasedLinksUnderACrash crashes a rank of recursive doubling and
// of Rabenseifner on released links: each survivor either completes, its
// data having all come, or fails naming the crashed rank, none hangs,
// and the ranks hold a fraction of the connections that links kept
// would, Rabenseifner's too, which meets each peer twice.
func TestReleasedLinksUnderACrash(t *testing.T) {
	for _, algo := range []string{"recursive_doubling", "rabenseifner"} {
		run := func(release bool) *Result {
			cfg := config(algorithms.AllReduce, 1024, 1<<18, 7)
			cfg.Topology = DGXH100(128)
			cfg.Algorithm, cfg.Iterations, cfg.Phantom, cfg.ReleaseLinks = algo, 1, true, release
			cfg.Faults = Plan{{Kind: Crash, Rank: 17, At: 20 * time.Microsecond}}
			return mustRun(t, cfg)
		}
		kept, released := run(false), run(true)
		if !released.OK() {
			t.Fatalf("%s: violations: %v", algo, released.Violations)
		}
		failed := 0
		for r, o := range released.Ranks {
			switch {
			case o.Crashed || o.Completed == 1:
			case errors.Is(o.Err, commerr.ErrPeerFailed) && slices.Contains(ranksNamed(o.Err), 17):
				failed++
			default:
				t.Errorf("%s: rank %d: %+v", algo, r, o)
			}
		}
		if failed == 0 {
			t.Errorf("%s: no rank failed naming rank 17", algo)
		}
		if 2*released.PeakConnections > kept.PeakConnections {
			t.Errorf("%s: released links held %d connections at once, kept ones %d", algo, released.PeakConnections, kept.PeakConnections)
		}
		if again := run(true); again.Hash != released.Hash {
			t.Errorf("%s: the same seed traced %x, then %x", algo, released.Hash, again.Hash)
		}
	}
}

// ranksNamed returns the ranks an operation's error names.
func ranksNamed(err error) []int {
	var oe *commerr.OpError
	if errors.As(err, &oe) {
		return oe.Ranks
	}
	return nil
}

// TestReleasedLinksRefuseAgreementsAndWindows: both need links kept.
func TestReleasedLinksRefuseAgreementsAndWindows(t *testing.T) {
	for _, cfg := range []Config{
		{Agree: true},
		{Windows: true, Iterations: 1},
	} {
		c := config(algorithms.AllReduce, 4, 10, 1)
		c.Agree, c.Windows, c.ReleaseLinks = cfg.Agree, cfg.Windows, true
		if _, err := Run(c); err == nil {
			t.Errorf("agree %v, windows %v: ran", cfg.Agree, cfg.Windows)
		}
	}
}

// TestReleasedLinksRideOutResets: where the faults reset connections,
// which the links resume on new ones, a link could lose its release with
// its connection, so none is released, and every operation survives the
// partition, the drop and the flap as with links kept.
func TestReleasedLinksRideOutResets(t *testing.T) {
	for _, faults := range []string{
		"partition:ranks=0-2,at=5us,for=40us",
		"drop:link=1-2,at=10us",
		"flap:link=0-3,at=5us,for=30us",
	} {
		plan, err := ParsePlan(faults)
		if err != nil {
			t.Fatal(err)
		}
		for _, algo := range []string{"recursive_doubling", "rabenseifner"} {
			cfg := config(algorithms.AllReduce, 17, 4096, 3)
			cfg.Algorithm, cfg.Iterations, cfg.ReleaseLinks, cfg.Survive, cfg.Faults = algo, 4, true, true, plan
			res := mustRun(t, cfg)
			if !res.OK() {
				t.Errorf("%s, %s: %v", algo, faults, res.Violations)
			}
		}
	}
}

// TestHeldSendHearsOfAFailure: a send issued as its rank releases the
// link to its peer waits for the release before it starts. A failure the
// rank learns of meanwhile must fail it, as it fails a running one, and
// not be lost with the operation that was not running yet: rank 0 sends
// to rank 1 right after an all-reduce of three ranks that let go of rank
// 1, while rank 2 crashes at each time over the first 20 µs. Rank 0's
// send and rank 1's receive end alike, both done or both failed naming
// rank 2, and a send that failed before it started proves the wait.
func TestHeldSendHearsOfAFailure(t *testing.T) {
	failedHeld := 0
	for at := time.Duration(0); at <= 20*time.Microsecond; at += 500 * time.Nanosecond {
		cfg := config(algorithms.AllReduce, 3, 64, 1)
		cfg.ReleaseLinks = true
		cfg.Faults = Plan{{Kind: Crash, Rank: 2, At: at}}
		r := joined(t, &cfg, nil)
		var p2p [2]*gocomms.Work
		sendStarted := false
		for i := range cfg.Ranks {
			x, _ := tensor.New(tensor.Int64, 64)
			r.comms[i].AllReduceAsync(x, gocomms.Sum)
			y, _ := tensor.New(tensor.Int64, 16)
			switch i {
			case 0:
				p2p[0] = r.comms[0].SendAsync(y, 1)
				p2p[0].OnStart(func(*gocomms.Work) { sendStarted = true })
			case 1:
				p2p[1] = r.comms[1].RecvAsync(y, 0)
			}
		}
		cfg.Faults.arm(r)
		r.loop.Run(cfg.Limit)
		r.rt.System().Shutdown()
		for i, w := range p2p {
			select {
			case <-w.Done():
			default:
				t.Fatalf("crash at %v: rank %d's point-to-point operation never ended", at, i)
			}
			if err := w.Err(); err != nil && !(errors.Is(err, commerr.ErrPeerFailed) && slices.Contains(ranksNamed(err), 2)) {
				t.Fatalf("crash at %v: rank %d: %v, not a failure naming rank 2", at, i, err)
			}
		}
		send, recv := p2p[0].Err(), p2p[1].Err()
		if (send == nil) != (recv == nil) {
			t.Errorf("crash at %v: rank 0's send ended with %v, rank 1's receive with %v", at, send, recv)
		}
		if send != nil && !sendStarted {
			failedHeld++
		}
	}
	if failedHeld == 0 {
		t.Error("no send failed while it waited for its link: the test no longer reaches that wait")
	}
}

// joined builds cfg's run and every rank's communicator, rank i's with
// more[i] besides the run's options, for a test to issue its own
// operations on before it arms the faults and runs the loop.
func joined(t interface{ Fatal(...any) }, cfg *Config, more map[int][]gocomms.Option) *run {
	r := newRun(cfg, slog.New(slog.DiscardHandler))
	opts := r.commOptions()
	for i := range cfg.Ranks {
		if err := r.join(i, append(slices.Clip(opts), more[i]...)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestReleasedLinksMixOperations is the property of a communicator that
// releases its links, or, as a reference, keeps them, over operations of
// every kind in turn. Random small jobs run rounds of collectives, which
// on released links link each peer as they come to it and let go of it,
// and of point-to-point messages, which take their links at once (a ring
// shift in one batch, or a send and a receive each on its own), the
// actors run by the simulator's dispatch or by protoactor's contexts.
// They run under a random plan of up to three faults (mixedFaults), an
// abort of one rank at a random time or none, and one rank's operations
// timing out within 50 µs or none. Every operation of every rank not
// crashed ends; one that completes has the plain loop's result; one that
// fails does so for a fault, the abort or the early timeouts that
// explain it, as the simulator judges its own runs; and the same run
// played again traces alike.
func TestReleasedLinksMixOperations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 2).Draw(t, "nodes")
		ranks := nodes * rapid.IntRange(2, 5).Draw(t, "ranksPerNode")
		var rounds []mixedRound
		for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(mixedRounds)-1), 1, 6).Draw(t, "rounds") {
			rounds = append(rounds, mixedRounds[i])
		}
		count := rapid.SampledFrom([]int{1, 7, 1000, 40_000}).Draw(t, "count")
		cfg := config(algorithms.AllReduce, ranks, count, rapid.Uint64().Draw(t, "seed"))
		cfg.ReleaseLinks = rapid.Bool().Draw(t, "release")
		cfg.Protoactor = rapid.Bool().Draw(t, "protoactor")
		cfg.Topology = DGXH100(nodes)
		if !slices.ContainsFunc(rounds, func(r mixedRound) bool { return !r.p2p && r.name != "all-reduce" }) {
			// An all-reduce's schedule names none of the other collectives'.
			cfg.Algorithm = rapid.SampledFrom([]string{"", "ring", "recursive_doubling", "rabenseifner", "double_binary_tree"}).Draw(t, "algorithm")
		}
		within := time.Duration(rapid.IntRange(10, 200).Draw(t, "withinUs")) * time.Microsecond
		cfg.Faults = RandomPlan(rapid.Uint64().Draw(t, "planSeed"), ranks, rapid.IntRange(0, 3).Draw(t, "faults"), within, mixedFaults)
		aborts := rapid.IntRange(-1, ranks-1).Draw(t, "aborts") // -1: none
		abortAt := time.Duration(rapid.IntRange(0, 200).Draw(t, "abortAtUs")) * time.Microsecond
		hasty := rapid.IntRange(-1, ranks-1).Draw(t, "hasty") // -1: none
		hurry := time.Duration(rapid.IntRange(1, 50).Draw(t, "hurryUs")) * time.Microsecond
		// A rank that gives up on each operation holds up its peers for
		// their whole timeout, operation after operation.
		cfg.Limit = time.Duration(2*len(rounds)+1) * cfg.Timeout
		// works and results are by rank, then by round.
		play := func() (*run, [][][]*gocomms.Work, [][]*tensor.Tensor) {
			r := joined(t, &cfg, map[int][]gocomms.Option{hasty: {gocomms.WithTimeout(hurry)}})
			works := make([][][]*gocomms.Work, ranks)
			results := make([][]*tensor.Tensor, ranks)
			for i := range ranks {
				for k, round := range rounds {
					ws, result := round.issue(r.comms[i], k, count)
					works[i], results[i] = append(works[i], ws), append(results[i], result)
				}
			}
			cfg.Faults.arm(r)
			if aborts >= 0 {
				r.loop.At(abortAt, func() { r.comms[aborts].Abort(errors.New("the test aborts it")) })
			}
			r.loop.Run(cfg.Limit)
			r.rt.System().Shutdown()
			return r, works, results
		}
		// An abort explains the aborted rank's ErrAborted, and its peers'
		// failures that name it: the links it closes, or refuses, or
		// that find it silent.
		abortExplains := func(i int, err error) bool {
			switch {
			case aborts < 0:
				return false
			case i == aborts:
				return errors.Is(err, gocomms.ErrAborted)
			}
			return errors.Is(err, commerr.ErrPeerFailed) && slices.Contains(ranksNamed(err), aborts)
		}
		// A rank whose operations time out early explains timeouts: its
		// own, and those of the ranks that wait for it, or for the ranks
		// it holds up, each naming the rank it waited for; and failures
		// that name it.
		hastyExplains := func(err error) bool {
			return hasty >= 0 && (errors.Is(err, commerr.ErrTimeout) ||
				errors.Is(err, commerr.ErrPeerFailed) && slices.Contains(ranksNamed(err), hasty))
		}
		r, works, results := play()
		if again, _, _ := play(); again.trace.Hash() != r.trace.Hash() {
			t.Fatalf("the same seed traced %x, then %x", r.trace.Hash(), again.trace.Hash())
		}
		for i := range ranks {
			if r.net.crashed[i] {
				continue // a crashed rank's operations may end any way
			}
			for k, round := range rounds {
				failed := false
				for _, w := range works[i][k] {
					e := opEnd{err: w.Err()}
					select {
					case <-w.Done():
						e.ended = true
					default:
					}
					failed = failed || e.err != nil
					if e.ended && e.err != nil && (abortExplains(i, e.err) || hastyExplains(e.err)) {
						continue
					}
					if v := r.judge(i, round.name, k, e, sameRank); v != "" {
						t.Fatal(v)
					}
				}
				if results[i][k] == nil || failed {
					continue // nothing to check, or it failed
				}
				for j := range results[i][k].Numel() {
					if got, want := results[i][k].Int64At(j), round.want(i, ranks, k, count, j); got != want {
						t.Fatalf("rank %d, round %d (%s), element %d: %d, want %d", i, k, round.name, j, got, want)
					}
				}
			}
		}
	})
}

// mixedFaults are the faults TestReleasedLinksMixOperations draws: all
// but a restart, whose new process these operations do not reissue.
// Those that reset connections keep the links they touch from being
// released.
var mixedFaults = []FaultKind{Crash, Pause, Slow, Delay, Jitter, Duplicate, Loss, Skew, OneWay, Clog, Drop, Flap, Partition, Corrupt}

// mixedValue is rank i's element j in round k.
func mixedValue(i, k, j int) int64 { return int64(i*100_000 + k*10_000 + j) }

// mixedRound is an operation TestReleasedLinksMixOperations runs: issue
// starts a rank's part in round k, with its Works and the tensor that
// holds its result, whose element j want gives.
type mixedRound struct {
	name  string
	p2p   bool // point-to-point messages: no collective schedule
	issue func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor)
	want  func(i, ranks, k, count, j int) int64
}

// mixedInput is rank c's tensor of round k.
func mixedInput(c *gocomms.Comm, k, count int) *tensor.Tensor {
	x, _ := tensor.New(tensor.Int64, count)
	for j := range count {
		x.SetInt64(j, mixedValue(c.Rank(), k, j))
	}
	return x
}

var mixedRounds = []mixedRound{
	{name: "all-reduce",
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			x := mixedInput(c, k, count)
			return []*gocomms.Work{c.AllReduceAsync(x, gocomms.Sum)}, x
		},
		want: func(_, ranks, k, _, j int) int64 { return mixedSum(ranks, k, j) }},
	{name: "broadcast",
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			x := mixedInput(c, k, count)
			return []*gocomms.Work{c.BroadcastAsync(x, k%c.Size())}, x
		},
		want: func(_, ranks, k, _, j int) int64 { return mixedValue(k%ranks, k, j) }},
	{name: "all-gather",
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			out, blocks := mixedBlocks(c, k, count, c.Size(), false)
			return []*gocomms.Work{c.AllGatherAsync(blocks, mixedInput(c, k, count))}, out
		},
		want: func(_, _, k, count, j int) int64 { return mixedValue(j/count, k, j%count) }},
	{name: "batched ring shift", p2p: true,
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			i, n := c.Rank(), c.Size()
			y, _ := tensor.New(tensor.Int64, count)
			return []*gocomms.Work{c.NewBatch().Send(mixedInput(c, k, count), (i+1)%n).Recv(y, (i+n-1)%n).IssueAsync()}, y
		},
		want: func(i, ranks, k, _, j int) int64 { return mixedValue((i+ranks-1)%ranks, k, j) }},
	{name: "ring shift", p2p: true,
		// Even ranks send first and odd ones receive first, so that a
		// send that waits for its receiver waits for no send.
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			i, n := c.Rank(), c.Size()
			x, y := mixedInput(c, k, count), must(tensor.New(tensor.Int64, count))
			if i%2 == 0 {
				s := c.SendAsync(x, (i+1)%n)
				return []*gocomms.Work{s, c.RecvAsync(y, (i+n-1)%n)}, y
			}
			rv := c.RecvAsync(y, (i+n-1)%n)
			return []*gocomms.Work{rv, c.SendAsync(x, (i+1)%n)}, y
		},
		want: func(i, ranks, k, _, j int) int64 { return mixedValue((i+ranks-1)%ranks, k, j) }},
	{name: "reduce",
		// Only the root's result is the reduction's.
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			x, root := mixedInput(c, k, count), k%c.Size()
			w := c.ReduceAsync(x, root, gocomms.Sum)
			if c.Rank() != root {
				x = nil
			}
			return []*gocomms.Work{w}, x
		},
		want: func(_, ranks, k, _, j int) int64 { return mixedSum(ranks, k, j) }},
	{name: "reduce-scatter",
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			_, in := mixedBlocks(c, k, count, c.Size(), true)
			out := must(tensor.New(tensor.Int64, count))
			return []*gocomms.Work{c.ReduceScatterAsync(out, in, gocomms.Sum)}, out
		},
		want: func(i, ranks, k, count, j int) int64 { return mixedSum(ranks, k, i*count+j) }},
	{name: "all-to-all",
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			_, in := mixedBlocks(c, k, count, c.Size(), true)
			out, blocks := mixedBlocks(c, k, count, c.Size(), false)
			return []*gocomms.Work{c.AllToAllAsync(blocks, in)}, out
		},
		want: func(i, _, k, count, j int) int64 { return mixedValue(j/count, k, i*count+j%count) }},
	{name: "barrier",
		issue: func(c *gocomms.Comm, _, _ int) ([]*gocomms.Work, *tensor.Tensor) {
			return []*gocomms.Work{c.BarrierAsync()}, nil
		}},
	{name: "gather",
		// Only the root's outputs are the gathered blocks.
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			out, blocks := mixedBlocks(c, k, count, c.Size(), false)
			root := k % c.Size()
			w := c.GatherAsync(blocks, mixedInput(c, k, count), root)
			if c.Rank() != root {
				out = nil
			}
			return []*gocomms.Work{w}, out
		},
		want: func(_, _, k, count, j int) int64 { return mixedValue(j/count, k, j%count) }},
	{name: "scatter",
		issue: func(c *gocomms.Comm, k, count int) ([]*gocomms.Work, *tensor.Tensor) {
			_, in := mixedBlocks(c, k, count, c.Size(), true)
			out := must(tensor.New(tensor.Int64, count))
			return []*gocomms.Work{c.ScatterAsync(out, in, k%c.Size())}, out
		},
		want: func(i, ranks, k, count, j int) int64 { return mixedValue(k%ranks, k, i*count+j) }},
}

// mixedBlocks returns a tensor of n blocks of count elements, rank c's
// element j of round k in element j when filled, zeros otherwise, and
// its blocks.
func mixedBlocks(c *gocomms.Comm, k, count, n int, filled bool) (*tensor.Tensor, []*tensor.Tensor) {
	all := must(tensor.New(tensor.Int64, n*count))
	if filled {
		for j := range n * count {
			all.SetInt64(j, mixedValue(c.Rank(), k, j))
		}
	}
	blocks := make([]*tensor.Tensor, n)
	for p := range blocks {
		blocks[p] = must(all.Narrow(p*count, count))
	}
	return all, blocks
}

// mixedSum is element j of round k summed over the ranks.
func mixedSum(ranks, k, j int) int64 {
	sum := int64(0)
	for p := range ranks {
		sum += mixedValue(p, k, j)
	}
	return sum
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
