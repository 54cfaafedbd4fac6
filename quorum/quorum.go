package quorum

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/gocomms/gocomms/store"
)

// Config says where a job's rounds live and when a round closes.
type Config struct {
	Store       store.Store
	Job         string        // rounds live under "gocomms/quorum/<Job>/"
	Min         int           // fewest members a round closes with; < 1 means 1
	JoinTimeout time.Duration // once Min have joined, how long a round waits for more before it closes anyway (default 5s when 0)
	Poll        time.Duration // how often the round's first joiner looks at who has joined (default 1ms when 0)
}

// Round is a closed round: the same value on every member.
type Round struct {
	Number  int64    // rounds count up from 0
	ID      string   // fresh per round, the same on every member
	Members []string // the members' handles, in the order they joined
}

// ErrInvalid reports bad input to Join or Waiting, found before anything
// is stored.
var ErrInvalid = errors.New("quorum: invalid argument")

// Defaults for the zero Config fields.
const (
	DefaultJoinTimeout = 5 * time.Second
	DefaultPoll        = time.Millisecond
)

// Join joins the open round with handle and returns once the round closes
// with it among the members.
//
// expect is how many members the caller knows the round should have:
// survivors of the last round pass their number (the size of the last
// round), a newcomer passes 0. A round closes, with everyone who has joined
// it, once at least Min have joined and either
//   - some joiner passed an expect above 0, and as many joiners as the
//     largest expect passed one (the survivors are all back), or
//   - JoinTimeout has passed since the first joined.
//
// A round in which nobody expects anyone therefore waits the whole
// JoinTimeout for more to arrive, and a newcomer that joins before the
// survivors are back is taken along without delaying them.
//
// A handle that joins after its round closed without it joins the next
// round (and so on), so a late arrival is never lost. A handle should join
// once at a time: if a round has two joiners with the same handle, only the
// later one is a member and the earlier one moves on to the next round.
//
// ctx bounds the whole wait; errors wrap the store's error and say which
// round. A Join that fails may still be listed as a member of the round it
// was in, as a process that dies after joining is.
func Join(ctx context.Context, cfg Config, handle string, expect int) (Round, error) {
	p, err := cfg.params()
	if err != nil {
		return Round{}, err
	}
	if handle == "" {
		return Round{}, fmt.Errorf("%w: empty handle", ErrInvalid)
	}
	if expect < 0 {
		return Round{}, fmt.Errorf("%w: expect %d is negative", ErrInvalid, expect)
	}
	n, err := p.st.Add(ctx, p.openKey(), 0)
	if err != nil {
		return Round{}, fmt.Errorf("quorum: job %q: reading the open round: %w", p.job, err)
	}
	if n < 0 {
		return Round{}, fmt.Errorf("quorum: job %q: the open round is %d, below 0", p.job, n)
	}
	me := entry{expect: int64(expect), handle: handle}
	for {
		r, member, err := p.joinRound(ctx, n, me)
		if err != nil {
			return Round{}, err
		}
		if member {
			return r, nil
		}
		n++
	}
}

// Waiting reports how many handles have joined the open round (which has
// not closed): members of the last round call it between steps to learn
// that newcomers wait to grow in. It makes two store calls.
func Waiting(ctx context.Context, cfg Config) (int, error) {
	p, err := cfg.params()
	if err != nil {
		return 0, err
	}
	n, err := p.st.Add(ctx, p.openKey(), 0)
	if err != nil {
		return 0, fmt.Errorf("quorum: job %q: reading the open round: %w", p.job, err)
	}
	c, err := p.st.Add(ctx, p.key(n, "joined"), 0)
	if err != nil {
		return 0, p.errorf(n, "counting the joined", err)
	}
	return int(c), nil
}

// params is a checked Config with its defaults applied and the timings
// derived from it.
type params struct {
	st          store.Store
	job         string
	prefix      string // "gocomms/quorum/<Job>/"
	min         int
	joinTimeout time.Duration
	poll        time.Duration

	// grace is how long a counted slot's entry is awaited before the slot
	// counts as a joiner that died between counting in and writing it.
	grace time.Duration
	// takeover is how long a joiner that is not the closer waits for the
	// decision, from when it joined, before it runs the close rule itself;
	// it then tries again every takeover.
	takeover time.Duration
	// watch is how often a closer past its deadline looks for a decision
	// written by someone who took over.
	watch time.Duration
}

func (c Config) params() (*params, error) {
	switch {
	case c.Store == nil:
		return nil, fmt.Errorf("%w: nil Store", ErrInvalid)
	case c.Job == "":
		return nil, fmt.Errorf("%w: empty Job", ErrInvalid)
	case c.JoinTimeout < 0:
		return nil, fmt.Errorf("%w: JoinTimeout %v is negative", ErrInvalid, c.JoinTimeout)
	case c.Poll < 0:
		return nil, fmt.Errorf("%w: Poll %v is negative", ErrInvalid, c.Poll)
	}
	p := &params{
		st:          c.Store,
		job:         c.Job,
		prefix:      "gocomms/quorum/" + c.Job + "/",
		min:         max(c.Min, 1),
		joinTimeout: c.JoinTimeout,
		poll:        c.Poll,
	}
	if p.joinTimeout == 0 {
		p.joinTimeout = DefaultJoinTimeout
	}
	if p.poll == 0 {
		p.poll = DefaultPoll
	}
	p.grace = max(20*p.poll, min(p.joinTimeout/20, time.Second))
	p.takeover = p.joinTimeout + p.joinTimeout/2 + 2*p.grace
	p.watch = max(p.poll, p.joinTimeout/50)
	return p, nil
}

func (p *params) openKey() string { return p.prefix + "open" }

func (p *params) key(n int64, name string) string {
	return p.prefix + strconv.FormatInt(n, 10) + "/" + name
}

func (p *params) entryKey(n, slot int64) string {
	return p.key(n, "h/"+strconv.FormatInt(slot, 10))
}

func (p *params) errorf(n int64, doing string, err error) error {
	return fmt.Errorf("quorum: job %q round %d: %s: %w", p.job, n, doing, err)
}

// joinRound joins round n and returns its decision, and whether the caller
// is a member.
func (p *params) joinRound(ctx context.Context, n int64, me entry) (Round, bool, error) {
	slot, err := p.st.Add(ctx, p.key(n, "joined"), 1)
	if err != nil {
		return Round{}, false, p.errorf(n, "counting in", err)
	}
	start := time.Now()
	if slot < 1 {
		return Round{}, false, p.errorf(n, "counting in", fmt.Errorf("slot %d is below 1", slot))
	}
	if err := p.st.Set(ctx, p.entryKey(n, slot), me.encode()); err != nil {
		return Round{}, false, p.errorf(n, "writing the joiner's entry", err)
	}
	t := newTally(slot, me)
	var dec []byte
	if slot == 1 {
		dec, err = p.lead(ctx, n, t, start.Add(p.joinTimeout))
	} else {
		dec, err = p.await(ctx, n, t, start)
	}
	if err != nil {
		return Round{}, false, err
	}
	r, slots, err := decodeDecision(dec)
	if err != nil {
		return Round{}, false, p.errorf(n, "reading the decision", err)
	}
	r.Number = n
	return r, slices.Contains(slots, slot), nil
}

// lead is the closer's loop: it counts the joiners every poll and decides
// as soon as the close rule holds. Past the deadline it also looks, every
// watch, for a decision written by a joiner that took over.
func (p *params) lead(ctx context.Context, n int64, t *tally, deadline time.Time) ([]byte, error) {
	var watched time.Time
	for {
		if err := p.refresh(ctx, n, t); err != nil {
			return nil, err
		}
		now := time.Now()
		if ms, ok := p.ready(t, !now.Before(deadline)); ok {
			return p.decide(ctx, n, ms)
		}
		if !now.Before(deadline) && now.Sub(watched) >= p.watch {
			watched = now
			dec, ok, err := p.decided(ctx, n)
			if err != nil || ok {
				return dec, err
			}
		}
		if err := sleep(ctx, p.poll); err != nil {
			return nil, p.errorf(n, "waiting for joiners", err)
		}
	}
}

// await waits for round n's decision. If none comes within takeover of
// the caller joining, the closer may have died: the caller then counts the
// joiners itself and decides if the close rule holds (past the deadline, as
// it is by then), and otherwise waits another takeover and tries again.
func (p *params) await(ctx context.Context, n int64, t *tally, start time.Time) ([]byte, error) {
	until := start.Add(p.takeover)
	for {
		wctx, cancel := context.WithDeadline(ctx, until)
		dec, err := p.st.Get(wctx, p.key(n, "members"))
		expired := wctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			return dec, nil
		case ctx.Err() != nil || !expired:
			return nil, p.errorf(n, "waiting for the decision", err)
		}
		if err := p.refresh(ctx, n, t); err != nil {
			return nil, err
		}
		if ms, ok := p.ready(t, true); ok {
			return p.decide(ctx, n, ms)
		}
		until = time.Now().Add(p.takeover)
	}
}

// decided reads round n's decision if there is one, without waiting.
func (p *params) decided(ctx context.Context, n int64) ([]byte, bool, error) {
	key := p.key(n, "members")
	ok, err := p.st.Check(ctx, key)
	if err != nil {
		return nil, false, p.errorf(n, "looking for a decision", err)
	}
	if !ok {
		return nil, false, nil
	}
	dec, err := p.st.Get(ctx, key)
	if err != nil {
		return nil, false, p.errorf(n, "reading the decision", err)
	}
	return dec, true, nil
}

// decide opens round n+1 and then writes round n's decision, unless one
// stands already, and returns the one that stands. Opening the next round
// first means that once a decision exists, newcomers are sent to the next
// round, and Waiting counts them there.
func (p *params) decide(ctx context.Context, n int64, ms []member) ([]byte, error) {
	if err := p.advance(ctx, n); err != nil {
		return nil, err
	}
	dec, err := p.st.CompareSet(ctx, p.key(n, "members"), nil, encodeDecision(uuid.NewString(), ms))
	if err != nil {
		return nil, p.errorf(n, "writing the decision", err)
	}
	return dec, nil
}

// advance moves the open round from n to n+1, if it is still n.
func (p *params) advance(ctx context.Context, n int64) error {
	cur := strconv.AppendInt(nil, n, 10)
	next := strconv.AppendInt(nil, n+1, 10)
	v, err := p.st.CompareSet(ctx, p.openKey(), cur, next)
	if err == nil && bytes.Equal(v, cur) {
		// The key is missing (had it held cur, it would hold next now):
		// the open round is 0 in a store whose Add(k, 0) creates nothing.
		_, err = p.st.CompareSet(ctx, p.openKey(), nil, next)
	}
	if err != nil {
		return p.errorf(n, "opening the next round", err)
	}
	return nil
}

// ready applies the close rule to what t has seen, and returns the members
// if the round may close. late says that JoinTimeout has passed since the
// first joined.
func (p *params) ready(t *tally, late bool) ([]member, bool) {
	ms := t.members()
	if len(ms) < p.min {
		return nil, false
	}
	if late {
		return ms, true
	}
	var most, expecting int64
	for _, m := range ms {
		if m.expect > 0 {
			expecting++
			most = max(most, m.expect)
		}
	}
	return ms, most > 0 && expecting >= most
}

// tally is what a closer has learnt about who joined a round.
type tally struct {
	seen    int64           // slots 1..seen have been counted
	entries map[int64]entry // the entries read, by slot
	absent  []int64         // counted slots whose entries did not appear in time
}

func newTally(slot int64, me entry) *tally {
	return &tally{entries: map[int64]entry{slot: me}}
}

// member is a joiner that a decision lists.
type member struct {
	slot int64
	entry
}

// members lists the joiners whose entries were read, in slot order, each
// handle once, at its latest slot.
func (t *tally) members() []member {
	latest := make(map[string]int64, len(t.entries))
	for slot, e := range t.entries {
		if s, ok := latest[e.handle]; !ok || slot > s {
			latest[e.handle] = slot
		}
	}
	ms := make([]member, 0, len(latest))
	for _, slot := range latest {
		ms = append(ms, member{slot: slot, entry: t.entries[slot]})
	}
	slices.SortFunc(ms, func(a, b member) int { return cmp.Compare(a.slot, b.slot) })
	return ms
}

// refresh counts round n's joiners and reads the entries of the new ones.
// When nobody new has joined, it looks once more for the entries that were
// missing, all at once.
func (p *params) refresh(ctx context.Context, n int64, t *tally) error {
	count, err := p.st.Add(ctx, p.key(n, "joined"), 0)
	if err != nil {
		return p.errorf(n, "counting the joined", err)
	}
	if count > t.seen {
		var slots []int64
		for s := t.seen + 1; s <= count; s++ {
			if _, ok := t.entries[s]; !ok {
				slots = append(slots, s)
			}
		}
		t.seen = count
		return p.read(ctx, n, t, slots)
	}
	if len(t.absent) == 0 {
		return nil
	}
	keys := p.entryKeys(n, t.absent)
	ok, err := p.st.Check(ctx, keys...)
	if err != nil {
		return p.errorf(n, "looking for missing entries", err)
	}
	if !ok {
		return nil
	}
	slots := t.absent
	t.absent = nil
	return p.read(ctx, n, t, slots)
}

// read reads the entries of slots into t. An entry that does not appear
// within the grace is that of a joiner that died, or is late: the slot is
// kept in t.absent, which is no member and expects nobody. An entry that
// cannot be decoded is ignored.
func (p *params) read(ctx context.Context, n int64, t *tally, slots []int64) error {
	if len(slots) == 0 {
		return nil
	}
	keys := p.entryKeys(n, slots)
	gctx, cancel := context.WithTimeout(ctx, p.grace)
	vals, err := p.st.MultiGet(gctx, keys...)
	expired := gctx.Err() != nil
	cancel()
	if err == nil {
		t.add(slots, vals)
		return nil
	}
	if ctx.Err() != nil || !expired {
		return p.errorf(n, "reading the joiners' entries", err)
	}
	// Some entries are missing: read those that are there, one Check each.
	var there []int64
	for i, s := range slots {
		ok, err := p.st.Check(ctx, keys[i])
		if err != nil {
			return p.errorf(n, "looking for missing entries", err)
		}
		if ok {
			there = append(there, s)
		} else {
			t.absent = append(t.absent, s)
		}
	}
	if len(there) == 0 {
		return nil
	}
	vals, err = p.st.MultiGet(ctx, p.entryKeys(n, there)...)
	if err != nil {
		return p.errorf(n, "reading the joiners' entries", err)
	}
	t.add(there, vals)
	return nil
}

func (t *tally) add(slots []int64, vals [][]byte) {
	for i, s := range slots {
		if i >= len(vals) {
			return
		}
		if e, err := decodeEntry(vals[i]); err == nil {
			t.entries[s] = e
		}
	}
}

func (p *params) entryKeys(n int64, slots []int64) []string {
	keys := make([]string, len(slots))
	for i, s := range slots {
		keys[i] = p.entryKey(n, s)
	}
	return keys
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// entry is what a joiner writes in its slot.
type entry struct {
	expect int64
	handle string
}

// encode writes the expect in decimal, a newline, and the handle's bytes
// as they are.
func (e entry) encode() []byte {
	b := strconv.AppendInt(nil, e.expect, 10)
	b = append(b, '\n')
	return append(b, e.handle...)
}

func decodeEntry(b []byte) (entry, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return entry{}, errors.New("entry without a newline")
	}
	x, err := strconv.ParseInt(string(b[:i]), 10, 64)
	if err != nil || x < 0 {
		return entry{}, fmt.Errorf("entry with a bad expect %q", b[:i])
	}
	if i+1 == len(b) {
		return entry{}, errors.New("entry with an empty handle")
	}
	return entry{expect: x, handle: string(b[i+1:])}, nil
}

// encodeDecision writes the round ID and a newline, then for each member
// its slot and the length of its handle in decimal, a space between and a
// newline after, followed by the handle's bytes.
func encodeDecision(id string, ms []member) []byte {
	b := append([]byte(id), '\n')
	for _, m := range ms {
		b = strconv.AppendInt(b, m.slot, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(m.handle)), 10)
		b = append(b, '\n')
		b = append(b, m.handle...)
	}
	return b
}

// decodeDecision reads a decision into a Round without its Number, and the
// members' slots.
func decodeDecision(b []byte) (Round, []int64, error) {
	i := bytes.IndexByte(b, '\n')
	if i <= 0 {
		return Round{}, nil, errors.New("malformed decision: no round ID")
	}
	r := Round{ID: string(b[:i])}
	var slots []int64
	for rest := b[i+1:]; len(rest) > 0; {
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return Round{}, nil, errors.New("malformed decision: unterminated member")
		}
		f := bytes.Fields(rest[:j])
		if len(f) != 2 {
			return Round{}, nil, fmt.Errorf("malformed decision: member %q", rest[:j])
		}
		slot, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		size, err2 := strconv.ParseInt(string(f[1]), 10, 64)
		rest = rest[j+1:]
		if err1 != nil || err2 != nil || slot < 1 || size < 1 || size > int64(len(rest)) {
			return Round{}, nil, fmt.Errorf("malformed decision: member %q", f)
		}
		slots = append(slots, slot)
		r.Members = append(r.Members, string(rest[:size]))
		rest = rest[size:]
	}
	return r, slots, nil
}
