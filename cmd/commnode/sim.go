package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocomms/gocomms/cmd/commnode/internal/bench"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/gpu"
	"github.com/gocomms/gocomms/internal/spans"
	"github.com/gocomms/gocomms/simulation"
	"github.com/gocomms/gocomms/tensor"
)

// simFlags are `commnode sim`'s flags; replay prints them back.
type simFlags struct {
	ranks, nodes int
	op, bytes    string
	dtype, algo  string
	topology     string
	data         string
	chunk        int
	root, iters  int
	faults       string
	seed         uint64
	seeds        int
	jitter       time.Duration
	timeout      time.Duration
	limit        time.Duration
	json         bool
	trace        string
	survive      bool
	agree        bool
	windows      bool
	protoactor   bool
	releaseLinks bool
	afterShrink  int
	heartbeat    time.Duration
	silence      time.Duration
	force        bool
	cpuProfile   string
	memProfile   string
	chaos        chaosFlags
}

// simCommand runs `commnode sim`: the engine's real actors on virtual time
// over a simulated network, one seed or a sweep of them.
func simCommand(args []string, stdout, stderr io.Writer) int {
	var f simFlags
	fs := commandFlags("sim", "usage: commnode sim [--ranks N] [--nodes N] [--op OP] [--bytes B] [--algo A] [--faults PLAN] [--seed S] [flags]", stderr)
	f.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	limit := limitSimMemory()
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		fmt.Fprintf(stderr, "commnode sim: -cpuprofile: %v\n", err)
		return 1
	}
	defer stopProfile()
	if err := f.chaos.check(); err != nil {
		fmt.Fprintf(stderr, "commnode sim: %v\n", err)
		return 2
	}
	cfg, op, size, err := f.config()
	if err != nil {
		fmt.Fprintf(stderr, "commnode sim: %v\n", err)
		return 2
	}
	if f.seeds > 0 {
		if f.trace != "" || f.memProfile != "" {
			fmt.Fprintln(stderr, "commnode sim: --trace and --memprofile record one run, not a sweep")
			return 2
		}
		if !fits(&cfg, runtime.GOMAXPROCS(0), limit, f.force, stderr) {
			return 2
		}
		f.releaseLinks = cfg.ReleaseLinks
		return sweep(f, cfg, stdout, stderr)
	}
	cfg.Faults = f.chaos.plan(cfg.Faults, cfg.Seed, cfg.Ranks)
	if !fits(&cfg, 1, limit, f.force, stderr) {
		return 2
	}
	f.releaseLinks = cfg.ReleaseLinks
	return runSeed(f, cfg, op, size, stdout, stderr)
}

func (f *simFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.ranks, "ranks", 8, "simulated ranks")
	fs.IntVar(&f.nodes, "nodes", 1, "nodes the ranks spread over evenly")
	fs.StringVar(&f.op, "op", "all_reduce", "collective: all_reduce, reduce, broadcast, all_gather, reduce_scatter or barrier")
	fs.StringVar(&f.bytes, "bytes", "1M", "bytes per rank, as nccl-tests counts them (K, M, G or KiB, MiB, GiB)")
	fs.StringVar(&f.dtype, "dtype", "float32", "element type: int64, float32 or float64")
	fs.StringVar(&f.algo, "algo", "", "schedule (default: the selector's choice)")
	fs.StringVar(&f.topology, "topology", "dgx-h100", "network preset: dgx-h100, rail, host (nodes like this one: its GPUs, joined as NVML says), loopback or shm (this host's processes over TCP or shared memory, as fitted; --nodes ignored: one node), or FILE.json, a fit bench/calibrate.sh --fit wrote")
	fs.StringVar(&f.data, "data", "auto", "real (carried and checked), phantom (only lengths travel) or auto (phantom above 1 GiB of buffers)")
	fs.IntVar(&f.chunk, "chunk", 0, "largest message in bytes (0: the schedule's default)")
	fs.IntVar(&f.root, "root", 0, "root of rooted collectives")
	fs.IntVar(&f.iters, "iters", 1, "operations each rank runs, one after another")
	fs.StringVar(&f.faults, "faults", "", `fault plan, e.g. "crash:rank=17,at=2ms"`)
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the run (the first, with --seeds)")
	fs.IntVar(&f.seeds, "seeds", 0, "sweep this many seeds from --seed, in parallel, and report the failing ones")
	fs.DurationVar(&f.jitter, "jitter", 0, "extra delay per frame, up to this much, drawn from the seed")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "per-operation timeout, virtual time")
	fs.DurationVar(&f.limit, "limit", 10*time.Minute, "virtual-time bound: an operation pending after it has hung")
	fs.BoolVar(&f.survive, "survive", false, "every operation must complete: the faults are ones the engine rides out (harmless kinds, and resets shorter than the links' restart budget)")
	fs.BoolVar(&f.protoactor, "protoactor", false, "run the actors through protoactor's dispatch, as a process does, instead of the simulator's own: the same trace, slower")
	fs.BoolVar(&f.windows, "windows", false, "after its operations (with --iters 0, alone), every rank opens a window, puts a value into the next rank's with a signal and waits for the previous rank's, each checked")
	fs.BoolVar(&f.releaseLinks, "release-links", false, "every rank links a collective's peers as it comes to them and releases each link once no operation uses it (gocomms.WithLinkRelease)")
	fs.BoolVar(&f.agree, "agree", false, "after its operations (with --iters 0, alone), every rank runs the fault-tolerant agreement that ULFM's agree and shrink rest on")
	fs.IntVar(&f.afterShrink, "after-shrink", 0, "with --agree, the survivors then shrink to a communicator of their own and run this many all-reduces there, each checked")
	fs.DurationVar(&f.heartbeat, "heartbeat", 0, "ranks ask a peer they wait on for a frame after this long without one, virtual time (default 1s)")
	fs.DurationVar(&f.silence, "silence", 0, "a peer a rank waits on that stays silent this long has failed, virtual time (default 5s; negative: never)")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	fs.BoolVar(&f.force, "force", false, "run even where the estimate of live heap is over the memory limit")
	fs.StringVar(&f.trace, "trace", "", "write the run's timeline to this file in Chrome trace format (open it in Perfetto)")
	f.chaos.register(fs)
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `file`")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile to `file` once virtual time stops, every rank still held (go tool pprof -sample_index=inuse_space)")
}

// runSeed runs cfg, a single seed, and prints its report, saying how far
// it has got as it goes. It returns the command's exit code: 1 if the run
// failed, 2 if it could not run.
func runSeed(f simFlags, cfg simulation.Config, op bench.Op, size int64, stdout, stderr io.Writer) int {
	if f.trace != "" {
		file, err := os.Create(f.trace)
		if err != nil {
			fmt.Fprintf(stderr, "commnode sim: --trace: %v\n", err)
			return 2
		}
		defer file.Close()
		cfg.Trace = file
	}
	writeHeap, closeHeap, err := openHeapProfile(f.memProfile)
	if err != nil {
		fmt.Fprintf(stderr, "commnode sim: --memprofile: %v\n", err)
		return 2
	}
	defer closeHeap()
	if writeHeap != nil {
		cfg.AtEnd = func() {
			if err := writeHeap(); err != nil {
				fmt.Fprintf(stderr, "commnode sim: --memprofile: %v\n", err)
			}
		}
	}
	defer dumpFlightRecordsOnSignal(stderr)()
	// A long run says how far it has got, every few seconds.
	cfg.Progress, cfg.ProgressEvery = func(p simulation.Progress) { printProgress(stderr, p, cfg.Ranks) }, 5*time.Second
	start := time.Now()
	res, err := simulation.Run(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "commnode sim: %v\n", err)
		return 2
	}
	report := newSimReport(f, cfg, op, size, res, time.Since(start))
	if f.chaos.shrink && !res.OK() {
		report.Shrunk = f.shrink(cfg, stderr)
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return 1
		}
	} else {
		report.print(stdout)
	}
	if !res.OK() {
		return 1
	}
	return 0
}

// bigRun is the estimate of live heap past which sim says it before it
// starts: a run whose set-up alone takes a while.
const bigRun = 1 << 30

// fits estimates the peak of live heap of runs runs of cfg at once (a
// sweep runs one per CPU) and compares it with limit, the memory limit
// the collector keeps to. Past the limit it releases the ranks' links as
// their schedules leave each peer (Config.ReleaseLinks), saying so, if
// that fits; else it refuses, saying so with the largest rank count of
// the same shape that fits, unless force runs it anyway. Large runs say
// their estimate first.
func fits(cfg *simulation.Config, runs int, limit int64, force bool, stderr io.Writer) bool {
	est, err := cfg.Estimate()
	if err != nil {
		fmt.Fprintf(stderr, "commnode sim: estimating the run's memory: %v\n", err)
		return false
	}
	gib := func(b int64) float64 { return float64(b) / (1 << 30) }
	shape := func(est simulation.Footprint) string {
		s := fmt.Sprintf("%d ranks of %s, %.1f links and %.0f steps a rank", cfg.Ranks, est.Algorithm, est.Links, est.Steps)
		if runs > 1 {
			s = fmt.Sprintf("%d runs at once of %s", runs, s)
		}
		return s
	}
	need := est.Bytes * int64(runs)
	released, smallest := "", *cfg // the run's shape at its smallest
	if need > limit && !force && !cfg.ReleaseLinks && !cfg.Agree && !cfg.Windows {
		rel := *cfg
		rel.ReleaseLinks = true
		if r, err := rel.Estimate(); err == nil && r.Bytes < est.Bytes {
			if r.Bytes*int64(runs) <= limit {
				fmt.Fprintf(stderr, "links     released as the schedules leave their peers (--release-links): kept, %s would need about %.1f GiB of live heap, over the %.1f GiB limit\n",
					shape(est), gib(need), gib(limit))
				*cfg = rel
				est, need = r, r.Bytes*int64(runs)
			} else {
				released = fmt.Sprintf(", or %.1f GiB with links released as the schedules leave their peers (--release-links)", gib(r.Bytes*int64(runs)))
				smallest = rel
			}
		}
	}
	if need <= limit || force {
		if need > bigRun || need > limit {
			fmt.Fprintf(stderr, "estimate  %.1f GiB of live heap for %s; the limit is %.1f GiB\n", gib(need), shape(est), gib(limit))
			fmt.Fprint(stderr, hugePagesHint(hugePages()))
		}
		return true
	}
	most, err := smallest.MostRanks(limit / int64(runs))
	if err != nil {
		fmt.Fprintf(stderr, "commnode sim: estimating the run's memory: %v\n", err)
		return false
	}
	fmt.Fprintf(stderr, "commnode sim: refused: %s need about %.1f GiB of live heap%s, over the %.1f GiB limit "+
		"(five eighths of this machine's memory, or GOMEMLIMIT); at most %d ranks of this shape fit. "+
		"--force runs it anyway.\n", shape(est), gib(need), released, gib(limit), most)
	return false
}

func printProgress(w io.Writer, p simulation.Progress, ranks int) {
	if p.Phase == simulation.Building {
		fmt.Fprintf(w, "progress  %s: %d of %d, %.0f s\n", p.Phase, p.Built, ranks, p.Wall.Seconds())
		return
	}
	fmt.Fprintf(w, "progress  %s: %v simulated, %d events, %d frames, %.0f s (%.0f frames/s)\n",
		p.Phase, p.SimTime, p.Events, p.Frames, p.Wall.Seconds(), float64(p.Frames)/p.Wall.Seconds())
}

// config is the run the flags describe, with the collective and its size
// in bytes as nccl-tests counts them.
func (f *simFlags) config() (cfg simulation.Config, op bench.Op, size int64, err error) {
	ops, err := bench.ParseOps(f.op)
	if err != nil {
		return cfg, 0, 0, fmt.Errorf("--op: %w", err)
	}
	if len(ops) != 1 {
		return cfg, 0, 0, fmt.Errorf("--op %q: want one collective", f.op)
	}
	op = ops[0]
	kind, ok := op.Kind()
	if !ok {
		kind = simulation.PointToPoint // send_recv
	}
	if size, err = bench.ParseBytes(f.bytes); err != nil {
		return cfg, 0, 0, fmt.Errorf("--bytes: %w", err)
	}
	dt, err := tensor.ParseDType(f.dtype)
	if err != nil {
		return cfg, 0, 0, fmt.Errorf("--dtype: %w", err)
	}
	var topo simulation.Topology
	switch f.topology {
	case "dgx-h100":
		topo = simulation.DGXH100(f.nodes)
	case "rail":
		topo = simulation.RailCluster(f.nodes)
	case "host":
		if topo, err = hostTopology(f.nodes); err != nil {
			return cfg, 0, 0, fmt.Errorf("--topology host: %w", err)
		}
	case "loopback":
		topo = simulation.Loopback(f.ranks)
	case "shm":
		topo = simulation.SharedMemory(f.ranks)
	default:
		if !strings.HasSuffix(f.topology, ".json") {
			return cfg, 0, 0, fmt.Errorf("--topology %q: want dgx-h100, rail, host, loopback, shm or a fit's FILE.json", f.topology)
		}
		fit, err := simulation.LoadHostFit(f.topology)
		if err != nil {
			return cfg, 0, 0, fmt.Errorf("--topology: %w", err)
		}
		topo = fit.Topology(f.ranks)
	}
	plan, err := simulation.ParsePlan(f.faults)
	if err != nil {
		return cfg, 0, 0, fmt.Errorf("--faults: %w", err)
	}
	_, _, count := op.Counts(int(size/int64(dt.Size())), f.ranks)
	cfg = simulation.Config{
		Ranks: f.ranks, Topology: topo, Op: kind, Count: count, DType: dt,
		Algorithm: f.algo, ChunkBytes: f.chunk, Root: f.root, Iterations: f.iters,
		Timeout: f.timeout, Seed: f.seed, Faults: plan, Jitter: f.jitter, Limit: f.limit, Survive: f.survive, Agree: f.agree, Windows: f.windows, Protoactor: f.protoactor, ReleaseLinks: f.releaseLinks,
		AfterShrink: f.afterShrink, Heartbeat: f.heartbeat, Silence: f.silence,
	}
	switch f.data {
	case "real":
	case "phantom":
		cfg.Phantom = true
	case "auto":
		cfg.Phantom = cfg.DataBytes() > simulation.PhantomAbove
	default:
		return cfg, 0, 0, fmt.Errorf("--data %q: want real, phantom or auto", f.data)
	}
	return cfg, op, size, nil
}

// hostTopology is a cluster of nodes like this host: its GPUs joined as
// NVML reports their NVLinks (or PCIe), the DGX H100 preset's NIC
// between nodes.
func hostTopology(nodes int) (simulation.Topology, error) {
	devs, err := gpu.Devices()
	if err != nil {
		return simulation.Topology{}, err
	}
	topo := simulation.DGXH100(nodes)
	topo.Intra.Bandwidth = gpu.PeerBandwidth(devs)
	return topo, nil
}

// replay is the command that runs seed again with every other flag as
// given.
func (f simFlags) replay(seed uint64) string {
	args := []string{"commnode sim",
		"--ranks", strconv.Itoa(f.ranks), "--nodes", strconv.Itoa(f.nodes), "--topology", f.topology,
		"--op", f.op, "--bytes", f.bytes, "--dtype", f.dtype, "--iters", strconv.Itoa(f.iters),
		"--root", strconv.Itoa(f.root), "--chunk", strconv.Itoa(f.chunk), "--data", f.data,
		"--timeout", f.timeout.String(), "--limit", f.limit.String(), "--jitter", f.jitter.String(),
	}
	if f.algo != "" {
		args = append(args, "--algo", f.algo)
	}
	if f.survive {
		args = append(args, "--survive")
	}
	if f.agree {
		args = append(args, "--agree")
	}
	if f.releaseLinks {
		args = append(args, "--release-links")
	}
	if f.protoactor {
		args = append(args, "--protoactor")
	}
	if f.windows {
		args = append(args, "--windows")
	}
	if f.afterShrink > 0 {
		args = append(args, "--after-shrink", strconv.Itoa(f.afterShrink))
	}
	if f.heartbeat != 0 || f.silence != 0 {
		args = append(args, "--heartbeat", f.heartbeat.String(), "--silence", f.silence.String())
	}
	if f.faults != "" {
		args = append(args, "--faults", strconv.Quote(f.faults))
	}
	return strings.Join(append(args, "--seed", strconv.FormatUint(seed, 10)), " ")
}

// simReport is one run, as printed.
type simReport struct {
	Ranks       int                     `json:"ranks"`
	Nodes       int                     `json:"nodes"`
	Op          string                  `json:"op"`
	Bytes       int64                   `json:"bytes"`
	Algorithm   string                  `json:"algorithm"`
	Seed        uint64                  `json:"seed"`
	Faults      string                  `json:"faults"`
	SimTimeUS   float64                 `json:"sim_time_us"` // per operation, when every rank completed every one
	EndedUS     float64                 `json:"ended_us"`    // when the last operation ended
	AlgBW       float64                 `json:"algbw"`       // GB/s
	BusBW       float64                 `json:"busbw"`       // GB/s
	Outcomes    []string                `json:"outcomes"`    // ranks grouped by how they ended
	TraceHash   string                  `json:"trace_hash"`
	Events      int64                   `json:"events"`
	Frames      int64                   `json:"frames"`
	Redials     int64                   `json:"redials"`
	Connections int64                   `json:"peak_connections"` // the most open at once
	Agreement   *simulation.Agreement   `json:"agreement,omitempty"`
	AfterShrink *simulation.AfterShrink `json:"after_shrink,omitempty"`
	Windows     int                     `json:"windows,omitempty"` // ranks whose one-sided exchange completed
	WallS       float64                 `json:"wall_s"`
	FramesPerS  float64                 `json:"frames_per_s"`
	Violations  []string                `json:"violations"`
	Replay      string                  `json:"replay"`

	// The build that ran it, and with --shrink, a failing run's plan
	// shrunk.
	Version string        `json:"version"`
	Shrunk  *shrunkReport `json:"shrunk,omitempty"`
}

func newSimReport(f simFlags, cfg simulation.Config, op bench.Op, size int64, res *simulation.Result, wall time.Duration) *simReport {
	send, _, _ := op.Counts(int(size/int64(cfg.DType.Size())), f.ranks)
	bytes := int64(send * cfg.DType.Size())
	var perOp time.Duration
	if cfg.Iterations > 0 {
		perOp = res.SimTime / time.Duration(cfg.Iterations)
	}
	r := &simReport{
		Ranks: cfg.Ranks, Nodes: cfg.Topology.Nodes, Op: op.String(), Bytes: bytes,
		Algorithm: res.Algorithm, Seed: cfg.Seed, Faults: cfg.Faults.String(),
		EndedUS:  float64(res.SimTime) / float64(time.Microsecond),
		Outcomes: outcomes(res), TraceHash: fmt.Sprintf("%016x", res.Hash),
		Events: res.Events, Frames: res.Frames, Redials: res.Redials, Connections: res.PeakConnections, Agreement: res.Agreement, AfterShrink: res.AfterShrink, Windows: res.Windows, WallS: wall.Seconds(),
		Violations: res.Violations, Replay: f.replayWith(cfg.Seed, cfg.Faults), Version: bench.Version(),
	}
	for _, o := range res.Ranks {
		if o.Completed != cfg.Iterations {
			perOp = 0 // a failed run has no time per operation
		}
	}
	if perOp > 0 {
		r.SimTimeUS = float64(perOp) / float64(time.Microsecond)
		r.AlgBW = float64(bytes) / perOp.Seconds() / 1e9
		r.BusBW = r.AlgBW * op.BusFactor(cfg.Ranks)
	}
	if wall > 0 {
		r.FramesPerS = float64(res.Frames) / wall.Seconds()
	}
	return r
}

func (r *simReport) print(w io.Writer) {
	fmt.Fprintf(w, "simulated %s of %d bytes on %d ranks over %d nodes: algorithm %s, seed %d", r.Op, r.Bytes, r.Ranks, r.Nodes, r.Algorithm, r.Seed)
	if r.Faults != "" {
		fmt.Fprintf(w, ", faults %q", r.Faults)
	}
	if r.SimTimeUS > 0 {
		fmt.Fprintf(w, "\nsim time  %.3f µs per operation   algbw %.3f GB/s   busbw %.3f GB/s\n", r.SimTimeUS, r.AlgBW, r.BusBW)
	} else {
		fmt.Fprintf(w, "\nsim time  the last operation ended at %.3f µs\n", r.EndedUS)
	}
	for _, o := range r.Outcomes {
		fmt.Fprintf(w, "ranks     %s\n", o)
	}
	fmt.Fprintf(w, "trace     %s (%d events, %d frames)\n", r.TraceHash, r.Events, r.Frames)
	fmt.Fprintf(w, "links     at most %d connections open at once\n", r.Connections)
	if r.Redials > 0 {
		fmt.Fprintf(w, "redials   %d connections made again after one broke\n", r.Redials)
	}
	if a := r.Agreement; a != nil {
		fmt.Fprintf(w, "agreed    flags %#x, failed ranks %v: %d ranks decided, %d frames\n", a.Value.Flags, a.Value.Failed, a.Deciders, a.Frames)
	}
	if a := r.AfterShrink; a != nil {
		fmt.Fprintf(w, "shrunk    to %d survivors: %d joined, %d all-reduces completed there\n", a.Size, a.Joined, a.Completed)
	}
	if r.Windows > 0 {
		fmt.Fprintf(w, "windows   %d ranks put, signalled and found their predecessor's value\n", r.Windows)
	}
	fmt.Fprintf(w, "wall      %.3f s (%.0f frames/s)\n", r.WallS, r.FramesPerS)
	for _, v := range r.Violations {
		fmt.Fprintf(w, "VIOLATION %s\n", v)
	}
	fmt.Fprintf(w, "replay    %s\nversion   %s\n", r.Replay, r.Version)
	r.Shrunk.print(w)
}

// outcomes groups the ranks by how they ended: "0-6,8: completed 1",
// "7: crashed", "9: failed, naming ranks [7] (peer failed)".
func outcomes(res *simulation.Result) []string {
	groups := map[string][]int{}
	var order []string
	for i, o := range res.Ranks {
		var k string
		switch {
		case o.Crashed:
			k = "crashed"
		case o.Pending > 0:
			k = fmt.Sprintf("never ended %d", o.Pending)
		case o.Err != nil:
			k = "failed: " + why(o.Err)
		default:
			k = fmt.Sprintf("completed %d", o.Completed)
		}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = fmt.Sprintf("%s: %s", spans.Format(groups[k], ","), k)
	}
	return out
}

// why says what kind of error err is and whom it names.
func why(err error) string {
	var oe *commerr.OpError
	if !errors.As(err, &oe) {
		return err.Error()
	}
	kind := "error"
	for _, k := range []error{commerr.ErrPeerFailed, commerr.ErrTimeout, commerr.ErrInvalidArgument, commerr.ErrAborted} {
		if errors.Is(err, k) {
			kind = strings.TrimPrefix(k.Error(), "gocomms: ")
		}
	}
	return fmt.Sprintf("%s, naming ranks %v", kind, oe.Ranks)
}

// sweep runs f.seeds seeds from cfg.Seed on every CPU, and prints each
// failing seed with its replay command.
func sweep(f simFlags, cfg simulation.Config, stdout, stderr io.Writer) int {
	start := time.Now()
	seeds := make(chan uint64)
	type failure struct {
		seed uint64
		why  string
		cfg  simulation.Config // the seed's run, with its plan
		ran  bool              // it broke invariants, rather than failing to start
	}
	var (
		mu       sync.Mutex
		failures []failure
		done     int
		wg       sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for seed := range seeds {
				c := cfg
				c.Seed = seed
				c.Faults = f.chaos.plan(cfg.Faults, seed, cfg.Ranks)
				res, err := simulation.Run(c)
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, failure{seed, err.Error(), c, false})
				case !res.OK():
					failures = append(failures, failure{seed, strings.Join(res.Violations, "; "), c, true})
				}
				done++
				if done%100 == 0 || done == f.seeds {
					fmt.Fprintf(stderr, "\r%d/%d seeds, %d failing", done, f.seeds, len(failures))
				}
				mu.Unlock()
			}
		})
	}
	for i := range f.seeds {
		seeds <- cfg.Seed + uint64(i)
	}
	close(seeds)
	wg.Wait()
	fmt.Fprintln(stderr)
	slices.SortFunc(failures, func(a, b failure) int { return int(a.seed - b.seed) })
	shrinks := 0
	for _, fl := range failures {
		fmt.Fprintf(stdout, "seed %d: %s\n", fl.seed, fl.why)
		if len(fl.cfg.Faults) > 0 {
			fmt.Fprintf(stdout, "  faults: %s\n", fl.cfg.Faults)
		}
		fmt.Fprintf(stdout, "  replay: %s\n", f.replayWith(fl.seed, fl.cfg.Faults))
		if f.chaos.shrink && fl.ran && shrinks < maxShrinks {
			shrinks++
			s := f.shrink(fl.cfg, stderr)
			fmt.Fprintf(stdout, "  shrunk: %s\n  minimal: %s\n", s.summary(), s.Replay)
		}
	}
	fmt.Fprintf(stdout, "%d seeds, %d failing, %.1f s (gocomms %s)\n", f.seeds, len(failures), time.Since(start).Seconds(), bench.Version())
	if len(failures) > 0 {
		return 1
	}
	return 0
}
