package simulation

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/internal/names"
	"github.com/gocomms/gocomms/internal/spans"
)

// Plan is the faults a run injects.
type Plan []Fault

// Fault is one injected fault: what it does (Kind), whom it touches, and
// when (from At, for For). Which other fields count depends on Kind; see
// the kinds.
type Fault struct {
	Kind FaultKind
	Rank int // the rank a crash, restart, pause or skew stops or changes
	// Ranks scopes the faults of links: nil for every link, one rank for
	// that rank's links, two for the link between them. For a partition,
	// one side, sorted.
	Ranks []int
	At    time.Duration
	For   time.Duration // how long a window fault lasts; 0 for the instant kinds
	// P is the probability that a frame suffers the fault (loss,
	// duplicate, corrupt).
	P float64
	// Factor slows a rank or link (slow), or a rank's clock (skew).
	Factor float64
	// By is how much a frame waits (delay), or at most (jitter).
	By time.Duration
}

// FaultKind says what a fault does.
type FaultKind int

// The faults. An operation must survive the harmless ones, which only
// delay frames (Harmless); the others may make it fail, but then with an
// error that names a rank in the fault's scope.
const (
	// Crash stops a rank for good at At: its actors freeze (its
	// dispatcher runs no more of their turns), its connections reset
	// after the frames already on their way, dials to it are refused.
	Crash FaultKind = iota + 1
	// Restart crashes a rank at At and starts a new process in its place
	// For later, which knows no communicator: dials to it are then
	// answered, and reset, instead of refused.
	Restart
	// Pause freezes a rank's network for For: nothing it sends leaves and
	// nothing sent to it is read until it resumes. Its timers still run.
	Pause
	// Loss drops each frame with probability P; the transport retransmits
	// it after the topology's Retransmit timeout, as often as it takes.
	Loss
	// Duplicate sends each frame twice with probability P: the copy costs
	// the wire, and the receiver's transport discards it.
	Duplicate
	// Delay adds By to each frame's latency.
	Delay
	// Jitter adds up to By, drawn from the seed, to each frame's latency.
	// Frames of one connection still arrive in order, so it reorders
	// frames of different connections: all the reordering TCP allows.
	Jitter
	// Clog holds the frames of the scope sent during the window until it
	// ends, as a stalled switch port would.
	Clog
	// Drop resets the scope's connections at At; the ranks may dial again.
	Drop
	// Flap resets the scope's connections at At and refuses dials across
	// it until the window ends.
	Flap
	// Partition cuts Group off from the other ranks for For: every
	// connection across resets, and dials across are refused.
	Partition
	// OneWay holds every frame from Group to the other ranks until the
	// window ends, while frames the other way flow: an asymmetric
	// partition that TCP rides out by retransmitting.
	OneWay
	// Slow makes a rank's ports, or a link, Factor times slower, and a
	// rank's per-frame overhead Factor times longer.
	Slow
	// Skew makes a rank's clock run Factor times as fast as virtual time:
	// its timeouts fire early (Factor > 1) or late.
	Skew
	// Corrupt flips a bit of each frame with probability P: the receiving
	// transport's checksum rejects it and resets the connection, naming
	// the sender.
	Corrupt
	// StoreOutage takes the rendezvous store down for For: a rank that
	// dials a peer for the first time reads the peer's address from the
	// store, and waits for it to come back (failing the dial after the
	// topology's DialTimeout).
	StoreOutage
)

// kindNames are the fault kinds as plans write them.
var kindNames = [...]string{
	Crash: "crash", Restart: "restart", Pause: "pause", Loss: "loss", Duplicate: "dup",
	Delay: "delay", Jitter: "jitter", Clog: "clog", Drop: "drop", Flap: "flap",
	Partition: "partition", OneWay: "oneway", Slow: "slow", Skew: "skew",
	Corrupt: "corrupt", StoreOutage: "store",
}

// Kinds lists every fault kind.
func Kinds() []FaultKind {
	ks := make([]FaultKind, 0, len(kindNames)-1)
	for k := Crash; k <= StoreOutage; k++ {
		ks = append(ks, k)
	}
	return ks
}

func (k FaultKind) String() string { return names.Of(k, "fault", kindNames[:]) }

// ParseKind reads a kind by the name plans give it.
func ParseKind(s string) (FaultKind, error) {
	for _, k := range Kinds() {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown fault kind %q (known: %s)", s, strings.Join(kindNames[1:], ", "))
}

// shape is what a kind needs, for parsing and validating plans.
type shape struct {
	scope  scope
	window bool // For: the fault lasts, and heals
	p      bool
	factor bool
	by     bool
}

type scope int

const (
	rankScope  scope = iota // rank=R
	linkScope               // link=A-B, rank=R (its every link), or every link
	groupScope              // ranks=A-B+C
	noScope                 // the whole job
)

var shapes = [...]shape{
	Crash:       {scope: rankScope},
	Restart:     {scope: rankScope, window: true},
	Pause:       {scope: rankScope, window: true},
	Loss:        {scope: linkScope, window: true, p: true},
	Duplicate:   {scope: linkScope, window: true, p: true},
	Delay:       {scope: linkScope, window: true, by: true},
	Jitter:      {scope: linkScope, window: true, by: true},
	Clog:        {scope: linkScope, window: true},
	Drop:        {scope: linkScope},
	Flap:        {scope: linkScope, window: true},
	Partition:   {scope: groupScope, window: true},
	OneWay:      {scope: groupScope, window: true},
	Slow:        {scope: linkScope, window: true, factor: true},
	Skew:        {scope: rankScope, factor: true},
	Corrupt:     {scope: linkScope, window: true, p: true},
	StoreOutage: {scope: noScope, window: true},
}

// Harmless reports whether the kind only makes frames take longer, so
// that every operation must survive it. The others may make operations
// fail: they reset connections, stop ranks, hold frames for a whole window
// (longer, perhaps, than an operation's timeout), or run a clock fast.
func (k FaultKind) Harmless() bool {
	switch k {
	case Loss, Duplicate, Delay, Jitter, Slow:
		return true
	}
	return false
}

// Until is when the fault heals: the end of its window, or At for the
// instant kinds.
func (f Fault) Until() time.Duration { return f.At + f.For }

// active reports whether the fault's window holds virtual time t.
func (f *Fault) active(t time.Duration) bool { return t >= f.At && t < f.At+f.For }

// touches reports whether a frame between ranks a and b is in the fault's
// scope.
func (f *Fault) touches(a, b int) bool {
	switch shapes[f.Kind].scope {
	case rankScope:
		return f.Rank == a || f.Rank == b
	case groupScope:
		return f.inGroup(a) != f.inGroup(b)
	case linkScope:
		switch len(f.Ranks) {
		case 1:
			return f.Ranks[0] == a || f.Ranks[0] == b
		case 2:
			return f.Ranks[0] == a && f.Ranks[1] == b || f.Ranks[0] == b && f.Ranks[1] == a
		}
	}
	return true
}

func (f *Fault) inGroup(r int) bool {
	_, ok := slices.BinarySearch(f.Ranks, r)
	return ok
}

// scopeRank is the one rank the fault names: a rank fault's, or the rank
// whose links a link fault touches.
func (f *Fault) scopeRank() int {
	if shapes[f.Kind].scope == rankScope {
		return f.Rank
	}
	return f.Ranks[0]
}

// involves reports whether rank r is in the fault's scope: an error that
// names r is one the fault explains.
func (f *Fault) involves(r int) bool {
	switch shapes[f.Kind].scope {
	case rankScope:
		return f.Rank == r
	case linkScope:
		return f.Ranks == nil || slices.Contains(f.Ranks, r)
	}
	return true // a partition's either side, or everyone
}

func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(f.Kind.String())
	sep := byte(':')
	put := func(k, v string) {
		b.WriteByte(sep)
		sep = ','
		b.WriteString(k + "=" + v)
	}
	switch sc := shapes[f.Kind].scope; {
	case sc == rankScope, sc == linkScope && len(f.Ranks) == 1:
		put("rank", strconv.Itoa(f.scopeRank()))
	case sc == linkScope && len(f.Ranks) == 2:
		put("link", strconv.Itoa(f.Ranks[0])+"-"+strconv.Itoa(f.Ranks[1]))
	case sc == groupScope:
		put("ranks", spans.Format(f.Ranks, "+"))
	}
	put("at", f.At.String())
	sh := shapes[f.Kind]
	if sh.window {
		put("for", f.For.String())
	}
	if sh.p {
		put("p", strconv.FormatFloat(f.P, 'g', -1, 64))
	}
	if sh.factor {
		put("factor", strconv.FormatFloat(f.Factor, 'g', -1, 64))
	}
	if sh.by {
		put("by", f.By.String())
	}
	return b.String()
}

// String writes the plan as ParsePlan reads it.
func (p Plan) String() string {
	parts := make([]string, len(p))
	for i, f := range p {
		parts[i] = f.String()
	}
	return strings.Join(parts, ";")
}

// ParsePlan reads faults written kind:key=value,... and separated by
// semicolons, e.g. "crash:rank=17,at=2ms;flap:link=3-4,at=1ms,for=5ms;
// loss:p=0.1,at=0s,for=1s;partition:ranks=0-3+8,at=1ms,for=2ms".
func ParsePlan(s string) (Plan, error) {
	var p Plan
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f, err := parseFault(part)
		if err != nil {
			return nil, fmt.Errorf("simulation: fault %q: %w", part, err)
		}
		p = append(p, f)
	}
	return p, nil
}

func parseFault(s string) (Fault, error) {
	name, args, _ := strings.Cut(s, ":")
	kind, err := ParseKind(name)
	if err != nil {
		return Fault{}, err
	}
	f := Fault{Kind: kind, At: -1}
	var rank int
	sh := shapes[kind]
	seen := map[string]bool{}
	for _, kv := range strings.Split(args, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return f, fmt.Errorf("%q is not key=value", kv)
		}
		if seen[k] {
			return f, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		switch {
		case k == "at":
			f.At, err = time.ParseDuration(v)
		case k == "for" && sh.window:
			f.For, err = time.ParseDuration(v)
		case k == "rank" && sh.scope == rankScope:
			f.Rank, err = strconv.Atoi(v)
		case k == "rank" && sh.scope == linkScope:
			rank, err = strconv.Atoi(v)
			f.Ranks = []int{rank}
		case k == "link" && sh.scope == linkScope:
			f.Ranks, err = parseLink(v)
		case k == "ranks" && sh.scope == groupScope:
			f.Ranks, err = parseSpans(v)
		case k == "p" && sh.p:
			f.P, err = strconv.ParseFloat(v, 64)
		case k == "factor" && sh.factor:
			f.Factor, err = strconv.ParseFloat(v, 64)
		case k == "by" && sh.by:
			f.By, err = time.ParseDuration(v)
		default:
			return f, fmt.Errorf("%s takes no %q (it takes %s)", kind, k, strings.Join(sh.keys(), ", "))
		}
		if err != nil {
			return f, fmt.Errorf("%s: %w", k, err)
		}
	}
	for _, k := range sh.keys() {
		if !seen[k] && k != "rank" && k != "link" {
			return f, fmt.Errorf("%s needs %s", kind, k)
		}
	}
	if sh.scope == rankScope && !seen["rank"] {
		return f, fmt.Errorf("%s needs rank", kind)
	}
	if seen["rank"] && seen["link"] {
		return f, fmt.Errorf("give rank or link, not both")
	}
	return f, nil
}

// keys lists the keys a kind takes.
func (sh shape) keys() []string {
	var ks []string
	switch sh.scope {
	case rankScope:
		ks = append(ks, "rank")
	case linkScope:
		ks = append(ks, "rank", "link")
	case groupScope:
		ks = append(ks, "ranks")
	}
	ks = append(ks, "at")
	for _, k := range []struct {
		on   bool
		name string
	}{{sh.window, "for"}, {sh.p, "p"}, {sh.factor, "factor"}, {sh.by, "by"}} {
		if k.on {
			ks = append(ks, k.name)
		}
	}
	return ks
}

func parseLink(s string) ([]int, error) {
	a, b, ok := strings.Cut(s, "-")
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || x == y {
		return nil, fmt.Errorf("%q is not two different ranks A-B", s)
	}
	return []int{x, y}, nil
}

// parseSpans reads ranks written as spans joined by '+': "0-3+8".
func parseSpans(s string) ([]int, error) {
	var out []int
	for _, span := range strings.Split(s, "+") {
		lo, hi, isSpan := strings.Cut(span, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isSpan {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q is not a list of ranks like 0-3+8", s)
		}
		for r := a; r <= b; r++ {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (p Plan) validate(ranks int) error {
	for _, f := range p {
		if err := f.validate(ranks); err != nil {
			return fmt.Errorf("simulation: fault %v: %w", f, err)
		}
	}
	return nil
}

func (f *Fault) validate(ranks int) error {
	if f.Kind < Crash || f.Kind > StoreOutage {
		return fmt.Errorf("unknown kind")
	}
	sh := shapes[f.Kind]
	inRange := func(r int) bool { return r >= 0 && r < ranks }
	for _, r := range f.Ranks {
		if !inRange(r) {
			return fmt.Errorf("rank %d out of range [0, %d)", r, ranks)
		}
	}
	switch {
	case f.At < 0 || f.For < 0:
		return fmt.Errorf("negative time")
	case sh.window && f.For == 0:
		return fmt.Errorf("a window of 0")
	case sh.scope == rankScope && !inRange(f.Rank):
		return fmt.Errorf("rank %d out of range [0, %d)", f.Rank, ranks)
	case sh.scope == linkScope && (len(f.Ranks) > 2 || len(f.Ranks) == 2 && f.Ranks[0] == f.Ranks[1]):
		return fmt.Errorf("a link fault names no rank, one, or the two ends of a link")
	case sh.scope == groupScope && (len(f.Ranks) == 0 || len(f.Ranks) >= ranks || !slices.IsSorted(f.Ranks)):
		return fmt.Errorf("a partition needs some but not all of the ranks [0, %d), sorted", ranks)
	case sh.scope == noScope && f.Ranks != nil:
		return fmt.Errorf("%s takes no ranks", f.Kind)
	case sh.p && (f.P <= 0 || f.P > 0.5):
		return fmt.Errorf("probability %g outside (0, 0.5]", f.P)
	case sh.factor && (f.Factor <= 0 || f.Factor > 1e6):
		return fmt.Errorf("factor %g outside (0, 1e6]", f.Factor)
	case sh.by && f.By <= 0:
		return fmt.Errorf("by %v must be positive", f.By)
	}
	return nil
}

// resets reports whether p resets connections that their ranks dial
// again (drops, flaps, partitions and corrupt frames): the links resume
// on new connections what the old ones lost.
func (p Plan) resets() bool {
	return slices.ContainsFunc(p, func(f Fault) bool {
		return f.Kind == Drop || f.Kind == Flap || f.Kind == Partition || f.Kind == Corrupt
	})
}

// healed is when the last fault heals: the liveness bound counts from
// there.
func (p Plan) healed() time.Duration {
	var t time.Duration
	for _, f := range p {
		t = max(t, f.Until())
	}
	return t
}

// explains reports whether a fault of the plan accounts for an operation's
// error: the error blames a failed peer or a timeout on a rank in the
// scope of a fault that is not harmless. Harmless faults explain no
// error: operations must survive them. The rank that reports the error,
// and the rank that accused a peer of failing, count as named (a rank
// whose clock runs fast gives up on healthy peers), and a rank counts as in the scope of a fault on another rank's
// links if the two were connected: the engine blames a broken connection
// on the peer across it.
// toRun maps the ranks the error names, ranks of the communicator that
// failed, to the run's.
func (p Plan) explains(err error, connected func(a, b int) bool, toRun func(rank int) int) bool {
	var oe *commerr.OpError
	if !errors.As(err, &oe) {
		return false
	}
	if !errors.Is(err, commerr.ErrPeerFailed) && !errors.Is(err, commerr.ErrTimeout) {
		return false
	}
	named := append([]int{oe.Rank}, oe.Ranks...)
	var acc *commerr.Accusation
	if errors.As(err, &acc) {
		named = append(named, acc.Accuser)
	}
	for i, r := range named {
		named[i] = toRun(r)
	}
	for i := range p {
		f := &p[i]
		if f.Kind.Harmless() {
			continue
		}
		for _, r := range named {
			if f.involves(r) || shapes[f.Kind].scope == linkScope && len(f.Ranks) == 1 && connected(f.Ranks[0], r) {
				return true
			}
		}
	}
	return false
}

// arm schedules the plan's timed faults on the run's loop; the network
// applies the others to each frame.
func (p Plan) arm(r *run) {
	for i := range p {
		f := &p[i]
		switch f.Kind {
		case Crash:
			r.loop.At(f.At, func() { r.crash(f.Rank) })
		case Restart:
			r.loop.At(f.At, func() { r.crash(f.Rank) })
			r.loop.At(f.Until(), func() { r.net.restarted[f.Rank] = true })
		case Drop, Flap:
			r.loop.At(f.At, func() { r.net.cut(f, errDropped) })
		case Partition:
			r.loop.At(f.At, func() { r.net.cut(f, errCut) })
		}
	}
}
