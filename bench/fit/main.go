package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/simulation"
	"github.com/gocomms/gocomms/tensor"
)

// point is one measured all-reduce.
type point struct {
	ranks, bytes int
	us           float64
}

func main() {
	in := flag.String("in", "", "measured medians: ranks, bytes, µs per row, tab-separated")
	name := flag.String("name", "loopback", "the topology's name")
	fitted := flag.String("describe", "", "when, where and to what it was fitted, for the file")
	cores := flag.Int("cores", runtime.NumCPU(), "CPUs of the machine measured")
	out := flag.String("out", "", "write the fit here (default: standard output)")
	start := flag.String("from", "", "a fit to start from (default: the preset of -name)")
	flag.Parse()
	if err := run(*in, *name, *fitted, *cores, *out, *start); err != nil {
		fmt.Fprintf(os.Stderr, "fit: %v\n", err)
		os.Exit(1)
	}
}

func run(in, name, fitted string, cores int, out, from string) error {
	points, err := readPoints(in)
	if err != nil {
		return err
	}
	f, ok := simulation.HostFits()[name]
	if from != "" {
		if f, err = simulation.LoadHostFit(from); err != nil {
			return err
		}
	} else if !ok {
		return fmt.Errorf("no preset named %q to start from; give -from", name)
	}
	f.Name, f.Fitted, f.Cores = name, fitted, cores
	f, cost := fit(f, points)
	fmt.Fprintf(os.Stderr, "fit: mean squared log ratio %.4f; geometric mean of |error| by ranks: %v\n", cost, f.Error)
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// fit fits from's free values to points, and returns the fit, with its
// errors, and its cost.
func fit(from simulation.HostFit, points []point) (simulation.HostFit, float64) {
	best, cost := nelderMead(func(x []float64) float64 { return objective(withParams(from, x), points) }, params(from), 0.3, 120)
	f := withParams(from, best)
	f.Error = errorsByRanks(f, points)
	return f, cost
}

func readPoints(path string) ([]point, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var ps []point
	sc := bufio.NewScanner(file)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		ranks, err1 := strconv.Atoi(fields[0])
		bytes, err2 := strconv.Atoi(fields[1])
		us, err3 := strconv.ParseFloat(fields[2], 64)
		if err1 != nil || err2 != nil || err3 != nil || ranks < 2 || bytes < 4 || !(us > 0) {
			return nil, fmt.Errorf("%s:%d: want ranks (2 or more), bytes (4 or more) and µs, got %q", path, line, sc.Text())
		}
		ps = append(ps, point{ranks, bytes, us})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%s: no measurements", path)
	}
	return ps, nil
}

// params are the fit's free values, each where the simplex moves it
// evenly: logarithms of the hop, bandwidth and wake-up, the logit of the
// latency's share, the exponents as they are. A fit without a wake-up
// starts from one as long as its hop.
func params(f simulation.HostFit) []float64 {
	share := min(max(f.LatencyShare, 0.01), 0.99)
	wake := cmp.Or(f.WakeUS, f.HopUS)
	return []float64{math.Log(f.HopUS), math.Log(f.BandwidthGBps), math.Log(share / (1 - share)), f.HopExponent, f.BandwidthExponent, math.Log(wake)}
}

func withParams(f simulation.HostFit, x []float64) simulation.HostFit {
	f.HopUS, f.BandwidthGBps, f.WakeUS = math.Exp(x[0]), math.Exp(x[1]), math.Exp(x[5])
	f.LatencyShare = 1 / (1 + math.Exp(-x[2]))
	f.HopExponent, f.BandwidthExponent = x[3], x[4]
	return f
}

// simulate times one all-reduce of bytes on ranks with f's topology.
func simulate(f simulation.HostFit, ranks, bytes int) (float64, error) {
	res, err := simulation.Run(simulation.Config{
		Ranks: ranks, Topology: f.Topology(ranks), Op: algorithms.AllReduce, Count: bytes / 4,
		DType: tensor.Float32, Iterations: 1, Timeout: time.Minute, Limit: 10 * time.Minute, Seed: 1, Phantom: true,
	})
	if err != nil {
		return 0, err
	}
	if !res.OK() {
		return 0, fmt.Errorf("%d ranks, %d bytes: %v", ranks, bytes, res.Violations)
	}
	return float64(res.SimTime) / float64(time.Microsecond), nil
}

// simulateAll times every point with f, a CPU's worth of runs at once.
func simulateAll(f simulation.HostFit, ps []point) ([]float64, error) {
	us := make([]float64, len(ps))
	errs := make([]error, len(ps))
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			for i := range work {
				us[i], errs[i] = simulate(f, ps[i].ranks, ps[i].bytes)
			}
		})
	}
	for i := range ps {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return us, nil
}

// objective is the mean squared log ratio of simulated to measured time;
// a fit the simulator rejects costs infinitely much.
func objective(f simulation.HostFit, ps []point) float64 {
	if f.Validate() != nil {
		return math.Inf(1)
	}
	us, err := simulateAll(f, ps)
	if err != nil {
		return math.Inf(1)
	}
	var sum float64
	for i, p := range ps {
		r := math.Log(us[i] / p.us)
		sum += r * r
	}
	return sum / float64(len(ps))
}

// errorsByRanks is the geometric mean of |error|, in percent, by rank count.
func errorsByRanks(f simulation.HostFit, ps []point) map[string]float64 {
	us, err := simulateAll(f, ps)
	if err != nil {
		return nil
	}
	logs, n := map[int]float64{}, map[int]int{}
	for i, p := range ps {
		e := math.Abs(us[i]-p.us) / p.us * 100
		logs[p.ranks] += math.Log(max(e, 0.01))
		n[p.ranks]++
	}
	out := map[string]float64{}
	for r, l := range logs {
		out[strconv.Itoa(r)] = math.Round(math.Exp(l/float64(n[r]))*10) / 10
	}
	return out
}

// nelderMead minimizes f from x0, with a first simplex step of step in
// every coordinate, for at most iters iterations; it returns the best
// point and its value.
func nelderMead(f func([]float64) float64, x0 []float64, step float64, iters int) ([]float64, float64) {
	n := len(x0)
	type vertex struct {
		x []float64
		v float64
	}
	simplex := make([]vertex, n+1)
	simplex[0] = vertex{slices.Clone(x0), f(x0)}
	for i := range n {
		x := slices.Clone(x0)
		x[i] += step
		simplex[i+1] = vertex{x, f(x)}
	}
	along := func(a, b []float64, t float64) []float64 { // a + t(b - a)
		out := make([]float64, n)
		for i := range out {
			out[i] = a[i] + t*(b[i]-a[i])
		}
		return out
	}
	for range iters {
		slices.SortFunc(simplex, func(a, b vertex) int { return cmpFloat(a.v, b.v) })
		centroid := make([]float64, n)
		for _, vx := range simplex[:n] {
			for i := range centroid {
				centroid[i] += vx.x[i] / float64(n)
			}
		}
		worst := simplex[n]
		r := along(centroid, worst.x, -1)
		rv := f(r)
		switch {
		case rv < simplex[0].v:
			e := along(centroid, worst.x, -2)
			if ev := f(e); ev < rv {
				simplex[n] = vertex{e, ev}
			} else {
				simplex[n] = vertex{r, rv}
			}
		case rv < simplex[n-1].v:
			simplex[n] = vertex{r, rv}
		default:
			c := along(centroid, worst.x, 0.5)
			if cv := f(c); cv < worst.v {
				simplex[n] = vertex{c, cv}
				continue
			}
			for i := 1; i <= n; i++ { // shrink toward the best
				x := along(simplex[0].x, simplex[i].x, 0.5)
				simplex[i] = vertex{x, f(x)}
			}
		}
	}
	slices.SortFunc(simplex, func(a, b vertex) int { return cmpFloat(a.v, b.v) })
	return simplex[0].x, simplex[0].v
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
