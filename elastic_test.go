package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/quorum"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/transport"
)

// elasticJob runs elastic members in this process, over one in-process
// network and store, and records what each saw at each step.
type elasticJob struct {
	cfg gocomms.ElasticConfig
	net transport.Network

	mu     sync.Mutex
	sums   map[int][]float64 // by step: the reduction the first member to finish it saw
	sizes  map[int]int       // by step: how many contributed
	deaths []int             // the steps the crashes came at, in order
}

func newElasticJob(t *testing.T) *elasticJob {
	return &elasticJob{
		cfg: gocomms.ElasticConfig{
			Quorum:    quorum.Config{Store: store.NewMemory(), Job: t.Name(), JoinTimeout: 5 * time.Second},
			GrowEvery: time.Millisecond,
		},
		net:   transport.NewInproc(),
		sums:  map[int][]float64{},
		sizes: map[int]int{},
	}
}

// member joins the job as process id, expecting expect members, and
// trains until step last or later, once a step had full strength again,
// or until the first step from die on that follows one at full strength,
// where it crashes. Its state is the step it is at
// and how many contributed to the last; a newcomer gets it from Heal.
func (j *elasticJob) member(ctx context.Context, id, expect, die, last, full int) error {
	e, err := gocomms.JoinElastic(ctx, gocomms.NativeBackend, gocomms.CPU, "elastic", gocomms.ElasticConfig{
		Quorum: j.cfg.Quorum, Expect: expect, GrowEvery: j.cfg.GrowEvery,
	}, gocomms.WithNetwork(j.net), gocomms.WithFailureDetector(100*time.Millisecond, time.Second))
	if err != nil {
		return fmt.Errorf("process %d: %w", id, err)
	}
	state := []int64{0, 0}
	for {
		if err := e.Heal(ctx, gocomms.FromSlice(state)); err != nil {
			return fmt.Errorf("process %d: heal: %w", id, err)
		}
		step := int(state[0])
		if step >= last && state[1] == int64(full) {
			return e.Finalize(ctx)
		}
		if die >= 0 && step >= die && state[1] == int64(full) {
			j.mu.Lock()
			j.deaths = append(j.deaths, step)
			j.mu.Unlock()
			// A crashed process's connections close: release them, as
			// the exit would.
			e.Comm().Abort(errors.New("simulated crash"))
			e.Finalize(ctx)
			return nil
		}
		x := []float64{1, float64(id), float64(step)}
		contributed, err := e.AllReduce(ctx, gocomms.FromSlice(x), gocomms.Sum)
		if err != nil {
			return fmt.Errorf("process %d, step %d: %w", id, step, err)
		}
		if n := float64(len(contributed)); x[0] != n || x[2] != n*float64(step) {
			return fmt.Errorf("process %d, step %d: sums %v from %d contributors", id, step, x, len(contributed))
		}
		j.mu.Lock()
		if seen, ok := j.sums[step]; ok && !slices.Equal(seen, x) {
			j.mu.Unlock()
			return fmt.Errorf("process %d, step %d: sums %v, another member saw %v", id, step, x, seen)
		}
		j.sums[step], j.sizes[step] = x, len(contributed)
		j.mu.Unlock()
		state[0], state[1] = state[0]+1, int64(len(contributed))
	}
}

// run starts n members that train until step last or later, each
// process in dies crashing at its step (once the job is at full
// strength), and a replacement for each once its crash has happened; it
// returns once every process has, with the steps the crashes came at.
func (j *elasticJob) run(t *testing.T, n, last int, dies map[int]int) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, n+len(dies))
	var originals sync.WaitGroup
	for id := 1; id <= n; id++ {
		die, ok := dies[id]
		if !ok {
			die = -1
		}
		originals.Go(func() { errs <- j.member(ctx, id, n, die, last, n) })
	}
	ended := make(chan struct{})
	go func() { originals.Wait(); close(ended) }()
	for k := range len(dies) {
		go func() {
			for {
				j.mu.Lock()
				crashed := len(j.deaths) > k
				j.mu.Unlock()
				if crashed {
					break
				}
				select {
				case <-ended:
					errs <- fmt.Errorf("the members ended before crash %d", k+1)
					return
				case <-time.After(time.Millisecond):
				}
			}
			errs <- j.member(ctx, n+1+k, 0, -1, last, n)
		}()
	}
	for range n + len(dies) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	return j.deaths
}

// want checks how many contributed to step.
func (j *elasticJob) want(t *testing.T, step, contributors int) {
	t.Helper()
	if got := j.sizes[step]; got != contributors {
		t.Errorf("step %d: %d contributors, want %d", step, got, contributors)
	}
}

// TestElasticShrinksAndGrowsBack trains four members; one crashes at step
// 10, the others finish that step among themselves and go on three
// strong; a replacement started then grows in and gets the state, and the
// job ends four strong at step 60 or later, with every step's reduction
// the same on every member.
func TestElasticShrinksAndGrowsBack(t *testing.T) {
	j := newElasticJob(t)
	deaths := j.run(t, 4, 60, map[int]int{3: 10})
	if t.Failed() {
		return
	}
	j.want(t, deaths[0]-1, 4)
	j.want(t, deaths[0], 3)
	j.want(t, slices.Max(slices.Collect(maps.Keys(j.sizes))), 4)
}

// TestElasticSurvivesSuccessiveFailures crashes a second member after the
// first one's replacement grew in, so that the survivors that shrink come
// from both the first communicator and the replacement's. The second
// crash waits for the replacement, which joins in milliseconds of wall
// time while a step takes tens of microseconds: the job runs long enough
// in steps for the replacement to join before the members may finish.
func TestElasticSurvivesSuccessiveFailures(t *testing.T) {
	j := newElasticJob(t)
	deaths := j.run(t, 4, 2000, map[int]int{3: 10, 1: 40})
	if t.Failed() {
		return
	}
	j.want(t, deaths[0], 3)
	j.want(t, deaths[1], 3)
	j.want(t, slices.Max(slices.Collect(maps.Keys(j.sizes))), 4)
}
