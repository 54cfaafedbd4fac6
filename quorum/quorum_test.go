package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/store"
)

// hooked wraps a store, counting its calls and letting a test fail Sets.
type hooked struct {
	store.Store
	calls atomic.Int64
	set   func(key string, value []byte) error // nil passes every Set through
	check func(keys []string, found bool)      // called after each Check with its answer; nil: Check is only counted
}

func (h *hooked) Set(ctx context.Context, key string, value []byte) error {
	h.calls.Add(1)
	if h.set != nil {
		if err := h.set(key, value); err != nil {
			return err
		}
	}
	return h.Store.Set(ctx, key, value)
}

func (h *hooked) Get(ctx context.Context, key string) ([]byte, error) {
	h.calls.Add(1)
	return h.Store.Get(ctx, key)
}

func (h *hooked) Add(ctx context.Context, key string, delta int64) (int64, error) {
	h.calls.Add(1)
	return h.Store.Add(ctx, key, delta)
}

func (h *hooked) CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error) {
	h.calls.Add(1)
	return h.Store.CompareSet(ctx, key, expected, desired)
}

func (h *hooked) Delete(ctx context.Context, key string) (bool, error) {
	h.calls.Add(1)
	return h.Store.Delete(ctx, key)
}

func (h *hooked) Check(ctx context.Context, keys ...string) (bool, error) {
	h.calls.Add(1)
	found, err := h.Store.Check(ctx, keys...)
	if h.check != nil && err == nil {
		h.check(keys, found)
	}
	return found, err
}

func (h *hooked) Wait(ctx context.Context, keys ...string) error {
	h.calls.Add(1)
	return h.Store.Wait(ctx, keys...)
}

func (h *hooked) NumKeys(ctx context.Context) (int64, error) {
	h.calls.Add(1)
	return h.Store.NumKeys(ctx)
}

func (h *hooked) Append(ctx context.Context, key string, value []byte) error {
	h.calls.Add(1)
	return h.Store.Append(ctx, key, value)
}

func (h *hooked) MultiGet(ctx context.Context, keys ...string) ([][]byte, error) {
	h.calls.Add(1)
	return h.Store.MultiGet(ctx, keys...)
}

func (h *hooked) MultiSet(ctx context.Context, keys []string, values [][]byte) error {
	h.calls.Add(1)
	return h.Store.MultiSet(ctx, keys, values)
}

type result struct {
	handle string
	round  Round
	err    error
	took   time.Duration
}

// join runs Join in a goroutine and delivers its result on out.
func join(ctx context.Context, cfg Config, handle string, expect int, out chan<- result) {
	go func() {
		start := time.Now()
		r, err := Join(ctx, cfg, handle, expect)
		out <- result{handle: handle, round: r, err: err, took: time.Since(start)}
	}()
}

// collect receives n results, failing the test if they do not come in 5s.
func collect(t *testing.T, out <-chan result, n int) []result {
	t.Helper()
	var rs []result
	timeout := time.After(5 * time.Second)
	for len(rs) < n {
		select {
		case r := <-out:
			rs = append(rs, r)
		case <-timeout:
			t.Fatalf("only %d of %d joins returned", len(rs), n)
		}
	}
	return rs
}

// sameRound checks that every result is the same successful round, and
// returns it.
func sameRound(t *testing.T, rs []result) Round {
	t.Helper()
	for _, r := range rs {
		if r.err != nil {
			t.Fatalf("Join(%q): %v", r.handle, r.err)
		}
	}
	want := rs[0].round
	for _, r := range rs[1:] {
		if !equalRounds(r.round, want) {
			t.Fatalf("Join(%q) = %+v, Join(%q) = %+v", r.handle, r.round, rs[0].handle, want)
		}
	}
	return want
}

func equalRounds(a, b Round) bool {
	return a.Number == b.Number && a.ID == b.ID && slices.Equal(a.Members, b.Members)
}

// sameSet reports whether a and b hold the same strings, ignoring order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// waitWaiting polls Waiting until it reports want.
func waitWaiting(t *testing.T, cfg Config, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := Waiting(context.Background(), cfg)
		if err != nil {
			t.Fatalf("Waiting: %v", err)
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Waiting = %d, want %d", got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAllExpectedCloseAtOnce(t *testing.T) {
	for _, n := range []int{1, 3, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			mem := store.NewMemory()
			out := make(chan result, n)
			stores := make(map[string]*hooked)
			var handles []string
			start := time.Now()
			for i := range n {
				h := fmt.Sprintf("rank-%d", i)
				handles = append(handles, h)
				stores[h] = &hooked{Store: mem}
				cfg := Config{Store: stores[h], Job: "job", JoinTimeout: time.Minute}
				join(context.Background(), cfg, h, n, out)
			}
			r := sameRound(t, collect(t, out, n))
			if took := time.Since(start); took > time.Minute/2 {
				t.Errorf("the round took %v to close, want well under the minute's JoinTimeout", took)
			}
			if r.Number != 0 {
				t.Errorf("Number = %d, want 0", r.Number)
			}
			if _, err := uuid.Parse(r.ID); err != nil {
				t.Errorf("ID %q is not a UUID: %v", r.ID, err)
			}
			if !sameSet(r.Members, handles) {
				t.Errorf("Members = %q, want %q in any order", r.Members, handles)
			}
			// Every member but the first (the closer) reads the open round,
			// counts in, writes its entry and reads the decision.
			for _, h := range r.Members[1:] {
				if c := stores[h].calls.Load(); c != 4 {
					t.Errorf("Join(%q) made %d store calls, want 4", h, c)
				}
			}
			// The round is closed: nobody waits in the next one.
			cfg := Config{Store: &hooked{Store: mem}, Job: "job"}
			if w, err := Waiting(context.Background(), cfg); err != nil || w != 0 {
				t.Errorf("Waiting = %d, %v; want 0", w, err)
			}
			if c := cfg.Store.(*hooked).calls.Load(); c != 2 {
				t.Errorf("Waiting made %d store calls, want 2", c)
			}
		})
	}
}

func TestMinAndTimeout(t *testing.T) {
	cfg := Config{Store: store.NewMemory(), Job: "job", Min: 2, JoinTimeout: 50 * time.Millisecond}
	out := make(chan result, 2)
	join(context.Background(), cfg, "a", 0, out)
	join(context.Background(), cfg, "b", 0, out)
	rs := collect(t, out, 2)
	r := sameRound(t, rs)
	if !sameSet(r.Members, []string{"a", "b"}) {
		t.Errorf("Members = %q, want a and b", r.Members)
	}
	slowest := max(rs[0].took, rs[1].took)
	if slowest < 50*time.Millisecond || slowest > 30*time.Second {
		t.Errorf("the round closed after %v, want about the 50ms JoinTimeout", slowest)
	}
}

func TestBelowMinNeverCloses(t *testing.T) {
	cfg := Config{Store: store.NewMemory(), Job: "job", Min: 2, JoinTimeout: 10 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := Join(ctx, cfg, "alone", 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Join alone with Min 2 = %v, want the context's deadline", err)
	}
	if !strings.Contains(err.Error(), "round 0") {
		t.Errorf("error %q does not name round 0", err)
	}
}

func TestLateArrivalJoinsNextRound(t *testing.T) {
	cfg := Config{Store: store.NewMemory(), Job: "job", JoinTimeout: time.Minute}
	survivors := []string{"s0", "s1", "s2"}
	out := make(chan result, 4)
	for _, h := range survivors {
		join(context.Background(), cfg, h, 3, out)
	}
	r0 := sameRound(t, collect(t, out, 3))
	if r0.Number != 0 || !sameSet(r0.Members, survivors) {
		t.Fatalf("round 0 = %+v, want number 0 with the survivors", r0)
	}
	waitWaiting(t, cfg, 0)

	start := time.Now()
	late := make(chan result, 1)
	join(context.Background(), cfg, "late", 0, late)
	waitWaiting(t, cfg, 1)
	select {
	case r := <-late:
		t.Fatalf("the late arrival returned %+v, %v alone", r.round, r.err)
	default:
	}

	for _, h := range survivors {
		join(context.Background(), cfg, h, len(r0.Members), out)
	}
	rs := append(collect(t, out, 3), collect(t, late, 1)...)
	r1 := sameRound(t, rs)
	if took := time.Since(start); took > time.Minute/2 {
		t.Errorf("round 1 took %v, want well under the minute's JoinTimeout", took)
	}
	if r1.Number != 1 {
		t.Errorf("Number = %d, want 1", r1.Number)
	}
	if r1.ID == r0.ID {
		t.Errorf("rounds 0 and 1 share the ID %q", r1.ID)
	}
	if len(r1.Members) != 4 || r1.Members[0] != "late" || !sameSet(r1.Members[1:], survivors) {
		t.Errorf("Members = %q, want late first, then the survivors", r1.Members)
	}
	waitWaiting(t, cfg, 0)
}

func TestCloserDies(t *testing.T) {
	// The JoinTimeout leaves time to cancel the closer before it closes.
	cfg := Config{Store: store.NewMemory(), Job: "job", JoinTimeout: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	dead := make(chan result, 1)
	join(ctx, cfg, "closer", 0, dead)
	waitWaiting(t, cfg, 1)

	others := []string{"a", "b", "c"}
	out := make(chan result, len(others))
	for _, h := range others {
		join(context.Background(), cfg, h, 0, out)
	}
	waitWaiting(t, cfg, 4)
	cancel()
	if r := <-dead; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the cancelled closer returned %+v, %v", r.round, r.err)
	}

	r := sameRound(t, collect(t, out, len(others)))
	for _, h := range others {
		if !slices.Contains(r.Members, h) {
			t.Errorf("Members = %q, want %q among them", r.Members, h)
		}
	}
	if r.Number != 0 {
		t.Errorf("Number = %d, want 0", r.Number)
	}
	// Whoever took over opened the next round.
	waitWaiting(t, cfg, 0)
}

func TestCloserDiesAloneBeforeOthersJoin(t *testing.T) {
	// Min 2 keeps the closer from closing alone before it is cancelled.
	cfg := Config{Store: store.NewMemory(), Job: "job", Min: 2, JoinTimeout: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	dead := make(chan result, 1)
	join(ctx, cfg, "closer", 0, dead)
	waitWaiting(t, cfg, 1)
	cancel()
	<-dead

	out := make(chan result, 2)
	join(context.Background(), cfg, "a", 2, out)
	join(context.Background(), cfg, "b", 2, out)
	r := sameRound(t, collect(t, out, 2))
	if !slices.Contains(r.Members, "a") || !slices.Contains(r.Members, "b") {
		t.Errorf("Members = %q, want a and b among them", r.Members)
	}
}

var errInjected = errors.New("injected failure")

func TestJoinerDiesBeforeItsEntry(t *testing.T) {
	mem := store.NewMemory()
	cfg := Config{Store: mem, Job: "job", JoinTimeout: 20 * time.Second}
	// ghost counts in but its entry is never written.
	ghostCfg := cfg
	ghostCfg.Store = &hooked{Store: mem, set: func(key string, _ []byte) error {
		if strings.Contains(key, "/h/") {
			return errInjected
		}
		return nil
	}}

	out := make(chan result, 3)
	start := time.Now()
	join(context.Background(), cfg, "a", 0, out)
	waitWaiting(t, cfg, 1)
	_, err := Join(context.Background(), ghostCfg, "ghost", 2)
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "round 0") {
		t.Fatalf("the ghost's Join = %v, want the store's error, naming round 0", err)
	}
	join(context.Background(), cfg, "b", 2, out)
	join(context.Background(), cfg, "c", 2, out)
	r := sameRound(t, collect(t, out, 3))
	if !slices.Equal(r.Members[:1], []string{"a"}) || !sameSet(r.Members, []string{"a", "b", "c"}) {
		t.Errorf("Members = %q, want a, then b and c", r.Members)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the round took %v, want it to close without waiting the 20s JoinTimeout", took)
	}
}

func TestDuplicateHandleLatestWins(t *testing.T) {
	cfg := Config{Store: store.NewMemory(), Job: "job", JoinTimeout: 10 * time.Second}
	out := make(chan result, 4)
	join(context.Background(), cfg, "a", 0, out)
	waitWaiting(t, cfg, 1)
	join(context.Background(), cfg, "dup", 2, out)
	waitWaiting(t, cfg, 2)
	join(context.Background(), cfg, "dup", 2, out)
	waitWaiting(t, cfg, 3)
	join(context.Background(), cfg, "b", 2, out)
	rs := collect(t, out, 3)
	r0 := sameRound(t, rs)
	if !slices.Equal(r0.Members, []string{"a", "dup", "b"}) {
		t.Fatalf("round 0 Members = %q, want a, dup, b", r0.Members)
	}
	// The earlier dup moved on to round 1.
	waitWaiting(t, cfg, 1)
	join(context.Background(), cfg, "c", 1, out)
	r1 := sameRound(t, collect(t, out, 2))
	if r1.Number != 1 || !slices.Equal(r1.Members, []string{"dup", "c"}) {
		t.Errorf("round 1 = %+v, want number 1 with dup, c", r1)
	}
}

func TestHandlesAnyBytes(t *testing.T) {
	handles := []string{"a\nb", "3\n", " x y ", "\x00\xff", "é/ü", strings.Repeat("z", 5000), "1 2\n3"}
	cfg := Config{Store: store.NewMemory(), Job: "j\nb/x"}
	out := make(chan result, len(handles))
	for _, h := range handles {
		join(context.Background(), cfg, h, len(handles), out)
	}
	r := sameRound(t, collect(t, out, len(handles)))
	if !sameSet(r.Members, handles) {
		t.Errorf("Members = %q, want %q in any order", r.Members, handles)
	}
}

func TestMalformedDecision(t *testing.T) {
	mem := store.NewMemory()
	if err := mem.Set(context.Background(), "gocomms/quorum/job/0/members", []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: mem, Job: "job"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Join(ctx, cfg, "a", 1)
	if err == nil || !strings.Contains(err.Error(), "round 0") || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("Join over a malformed decision = %v, want an error naming round 0", err)
	}
}

func TestStoreErrorsAreWrapped(t *testing.T) {
	mem := store.NewMemory()
	mem.Close()
	_, err := Join(context.Background(), Config{Store: mem, Job: "job"}, "a", 0)
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Join on a closed store = %v, want store.ErrClosed", err)
	}
	_, err = Waiting(context.Background(), Config{Store: mem, Job: "job"})
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("Waiting on a closed store = %v, want store.ErrClosed", err)
	}
}

func TestBadInput(t *testing.T) {
	mem := store.NewMemory()
	good := Config{Store: mem, Job: "job"}
	cases := []struct {
		name   string
		cfg    Config
		handle string
		expect int
	}{
		{"nil store", Config{Job: "job"}, "a", 0},
		{"empty job", Config{Store: mem}, "a", 0},
		{"empty handle", good, "", 0},
		{"negative expect", good, "a", -1},
		{"negative join timeout", Config{Store: mem, Job: "job", JoinTimeout: -time.Second}, "a", 0},
		{"negative poll", Config{Store: mem, Job: "job", Poll: -time.Millisecond}, "a", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Join(context.Background(), c.cfg, c.handle, c.expect)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Join = %v, want ErrInvalid", err)
			}
			if c.handle != "" && c.expect >= 0 {
				if _, err := Waiting(context.Background(), c.cfg); !errors.Is(err, ErrInvalid) {
					t.Errorf("Waiting = %v, want ErrInvalid", err)
				}
			}
		})
	}
	if n, err := mem.NumKeys(context.Background()); err != nil || n != 0 {
		t.Errorf("the store holds %d keys (%v) after bad input, want 0", n, err)
	}
}

func TestDecisionEncoding(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		handles := rapid.SliceOf(rapid.StringMatching(`(?s).+`)).Draw(rt, "handles")
		var ms []member
		for i, h := range handles {
			ms = append(ms, member{slot: int64(i + 1), entry: entry{handle: h}})
		}
		r, slots, err := decodeDecision(encodeDecision("id", ms))
		if err != nil {
			rt.Fatalf("decode: %v", err)
		}
		if r.ID != "id" || !slices.Equal(r.Members, handles) || len(slots) != len(handles) {
			rt.Fatalf("decoded %+v %v, want %q", r, slots, handles)
		}
		e := entry{expect: rapid.Int64Min(0).Draw(rt, "expect"), handle: rapid.StringMatching(`(?s).+`).Draw(rt, "handle")}
		if got, err := decodeEntry(e.encode()); err != nil || got != e {
			rt.Fatalf("entry %+v decoded as %+v, %v", e, got, err)
		}
		// Anything at all decodes to an error or a value, never a panic.
		junk := rapid.SliceOf(rapid.Byte()).Draw(rt, "junk")
		decodeDecision(junk)
		decodeEntry(junk)
	})
}

// TestRoundsProperty joins random numbers of handles with random expects
// and start delays. The test stands for the job's scheduler: when nobody
// has returned for a while (some joiners are stuck in a round below Min),
// it starts Min more joiners.
func TestRoundsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 10).Draw(rt, "joiners")
		minimum := rapid.IntRange(1, 3).Draw(rt, "min")
		cfg := Config{
			Store:       store.NewMemory(),
			Job:         "prop",
			Min:         minimum,
			JoinTimeout: 2 * time.Millisecond,
			Poll:        200 * time.Microsecond,
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()

		out := make(chan result)
		var wg sync.WaitGroup
		defer wg.Wait()
		start := func(handle string, expect int, delay time.Duration) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(delay)
				r, err := Join(ctx, cfg, handle, expect)
				out <- result{handle: handle, round: r, err: err}
			}()
		}
		for i := range n {
			expect := rapid.IntRange(0, 12).Draw(rt, "expect")
			delay := time.Duration(rapid.IntRange(0, 3000).Draw(rt, "delay µs")) * time.Microsecond
			start(fmt.Sprintf("p%d", i), expect, delay)
		}

		got := make(map[string]Round)
		outstanding, fillers := n, 0
		for outstanding > 0 {
			select {
			case r := <-out:
				outstanding--
				if r.err != nil {
					cancel()
					for ; outstanding > 0; outstanding-- {
						<-out
					}
					rt.Fatalf("Join(%q): %v", r.handle, r.err)
				}
				if _, dup := got[r.handle]; dup {
					rt.Fatalf("handle %q returned twice", r.handle)
				}
				got[r.handle] = r.round
			case <-time.After(10 * time.Millisecond):
				for range minimum {
					start(fmt.Sprintf("f%d", fillers), 0, 0)
					fillers++
					outstanding++
				}
			}
		}

		byNumber := make(map[int64]Round)
		ids := make(map[string]int64)
		for h, r := range got {
			if prev, ok := byNumber[r.Number]; ok && !equalRounds(prev, r) {
				rt.Fatalf("round %d is %+v for one member and %+v for %q", r.Number, prev, r, h)
			}
			byNumber[r.Number] = r
			if num, ok := ids[r.ID]; ok && num != r.Number {
				rt.Fatalf("rounds %d and %d share the ID %q", num, r.Number, r.ID)
			}
			ids[r.ID] = r.Number
			if c := count(r.Members, h); c != 1 {
				rt.Fatalf("%q returned round %d, whose members %q list it %d times", h, r.Number, r.Members, c)
			}
		}
		for num, r := range byNumber {
			if len(r.Members) < minimum {
				rt.Fatalf("round %d has %d members, below Min %d", num, len(r.Members), minimum)
			}
			for _, m := range r.Members {
				if count(r.Members, m) != 1 {
					rt.Fatalf("round %d lists %q twice: %q", num, m, r.Members)
				}
				if mr, ok := got[m]; !ok || mr.Number != num {
					rt.Fatalf("round %d lists %q, which returned round %d (%v)", num, m, mr.Number, ok)
				}
			}
		}
	})
}

func count(xs []string, x string) int {
	c := 0
	for _, y := range xs {
		if y == x {
			c++
		}
	}
	return c
}

func TestLateEntryIsReadAgain(t *testing.T) {
	mem := store.NewMemory()
	// slow's entry arrives once the closer's grace has passed: the closer
	// then looks for the entries that are there, one Check each.
	graceOver := make(chan struct{})
	var once sync.Once
	lookForEntry := func(keys []string, _ bool) {
		if slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "/h/") }) {
			once.Do(func() { close(graceOver) })
		}
	}
	cfg := Config{Store: &hooked{Store: mem, check: lookForEntry}, Job: "job", JoinTimeout: 10 * time.Second}
	slowCfg := cfg
	slowCfg.Store = &hooked{Store: mem, set: func(key string, _ []byte) error {
		if strings.Contains(key, "/h/") {
			select {
			case <-graceOver:
			case <-time.After(time.Minute):
				return errors.New("the closer never looked for the missing entry")
			}
		}
		return nil
	}}
	out := make(chan result, 2)
	start := time.Now()
	join(context.Background(), cfg, "a", 2, out)
	waitWaiting(t, cfg, 1)
	join(context.Background(), slowCfg, "slow", 2, out)
	r := sameRound(t, collect(t, out, 2))
	if !slices.Equal(r.Members, []string{"a", "slow"}) {
		t.Errorf("Members = %q, want a, slow", r.Members)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the round took %v, want it to close once slow's entry appeared, well before the 10s JoinTimeout", took)
	}
}

func TestCloserReadsADecisionWrittenByAnother(t *testing.T) {
	mem := store.NewMemory()
	// The decision appears only once the closer, past its deadline, has
	// looked for one and found none: it must look again.
	looked := make(chan struct{})
	var once sync.Once
	lookForDecision := func(keys []string, found bool) {
		if !found && slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(k, "/members") }) {
			once.Do(func() { close(looked) })
		}
	}
	// Min 2 keeps the lone closer from deciding itself.
	cfg := Config{Store: &hooked{Store: mem, check: lookForDecision}, Job: "job", Min: 2, JoinTimeout: 10 * time.Millisecond}
	out := make(chan result, 1)
	join(context.Background(), cfg, "a", 0, out)
	select {
	case <-looked:
	case <-time.After(time.Minute):
		t.Fatal("the closer never looked for a decision past its deadline")
	}
	dec := encodeDecision("other", []member{{slot: 1, entry: entry{handle: "a"}}})
	if err := mem.Set(context.Background(), "gocomms/quorum/job/0/members", dec); err != nil {
		t.Fatal(err)
	}
	r := sameRound(t, collect(t, out, 1))
	if !equalRounds(r, Round{Number: 0, ID: "other", Members: []string{"a"}}) {
		t.Errorf("Join = %+v, want the decision written by another", r)
	}
}

// lazyAdd is a store whose Add(k, 0) creates nothing when k is missing.
type lazyAdd struct{ store.Store }

func (s lazyAdd) Add(ctx context.Context, key string, delta int64) (int64, error) {
	if delta == 0 {
		if ok, err := s.Check(ctx, key); err != nil || !ok {
			return 0, err
		}
	}
	return s.Store.Add(ctx, key, delta)
}

func TestOpenRoundKeyMissing(t *testing.T) {
	cfg := Config{Store: lazyAdd{store.NewMemory()}, Job: "job"}
	for i, h := range []string{"a", "b"} {
		r, err := Join(context.Background(), cfg, h, 1)
		if err != nil {
			t.Fatalf("Join(%q): %v", h, err)
		}
		if r.Number != int64(i) || !slices.Equal(r.Members, []string{h}) {
			t.Errorf("Join(%q) = %+v, want round %d of %q alone", h, r, i, h)
		}
	}
}
