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

	mu    sync.Mutex
	sums  map[int][]float64 // by step: the reduction the first member to finish it saw
	sizes map[int]int       // by step: how many contributed
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
// or until step die, where it crashes. Its state is the step it is at
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
		if step == die {
			e.Comm().Abort(errors.New("simulated crash"))
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

// TestElasticShrinksAndGrowsBack trains four members; one crashes at step
// 10, the others finish that step among themselves and go on three
// strong; a replacement started then grows in and gets the state, and the
// job ends four strong at step 60 or later, with every step's reduction
// the same on every member.
func TestElasticShrinksAndGrowsBack(t *testing.T) {
	const n, die, last = 4, 10, 60
	j := newElasticJob(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, n+1)
	var members sync.WaitGroup
	for id := range n {
		stop := -1
		if id == 2 {
			stop = die
		}
		members.Go(func() { errs <- j.member(ctx, id+1, n, stop, last, n) })
	}
	ended := make(chan struct{})
	go func() { members.Wait(); close(ended) }()
	// The replacement starts once the crash has happened.
	go func() {
		for {
			j.mu.Lock()
			crashed := j.sizes[die] != 0
			j.mu.Unlock()
			if crashed {
				break
			}
			select {
			case <-ended:
				errs <- errors.New("the members ended before the crash")
				return
			case <-time.After(time.Millisecond):
			}
		}
		errs <- j.member(ctx, 5, 0, -1, last, n)
	}()
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		return
	}
	if got := j.sizes[die-1]; got != n {
		t.Errorf("step %d: %d contributors, want %d", die-1, got, n)
	}
	if got := j.sizes[die]; got != n-1 {
		t.Errorf("step %d, the crash: %d contributors, want %d", die, got, n-1)
	}
	final := slices.Max(slices.Collect(maps.Keys(j.sizes)))
	if got := j.sizes[final]; got != n {
		t.Errorf("step %d, the last: %d contributors, want %d after the replacement grew in", final, got, n)
	}
}
