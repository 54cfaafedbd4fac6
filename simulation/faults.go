package simulation

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Plan is the faults a run injects, each at a virtual time.
type Plan []Fault

// Fault is one injected fault.
type Fault struct {
	Kind FaultKind
	Rank int
	At   time.Duration
}

// FaultKind says what a fault does.
type FaultKind int

// The faults.
const (
	// Crash stops a rank for good: its actors stop, its connections reset.
	Crash FaultKind = iota + 1
)

func (k FaultKind) String() string {
	switch k {
	case Crash:
		return "crash"
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

func (f Fault) String() string {
	return fmt.Sprintf("%v:rank=%d,at=%v", f.Kind, f.Rank, f.At)
}

// String writes the plan as ParsePlan reads it.
func (p Plan) String() string {
	parts := make([]string, len(p))
	for i, f := range p {
		parts[i] = f.String()
	}
	return strings.Join(parts, ";")
}

// ParsePlan reads faults written as "crash:rank=17,at=2ms;crash:rank=3,at=1us".
func ParsePlan(s string) (Plan, error) {
	var p Plan
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, args, _ := strings.Cut(part, ":")
		f := Fault{Rank: -1, At: -1}
		switch kind {
		case "crash":
			f.Kind = Crash
		default:
			return nil, fmt.Errorf("simulation: fault %q: unknown kind %q (known: crash)", part, kind)
		}
		for _, kv := range strings.Split(args, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("simulation: fault %q: %q is not key=value", part, kv)
			}
			var err error
			switch k {
			case "rank":
				f.Rank, err = strconv.Atoi(v)
			case "at":
				f.At, err = time.ParseDuration(v)
			default:
				err = fmt.Errorf("unknown key %q (known: rank, at)", k)
			}
			if err != nil {
				return nil, fmt.Errorf("simulation: fault %q: %w", part, err)
			}
		}
		if f.Rank < 0 || f.At < 0 {
			return nil, fmt.Errorf("simulation: fault %q needs rank and at", part)
		}
		p = append(p, f)
	}
	return p, nil
}

func (p Plan) validate(ranks int) error {
	for _, f := range p {
		if f.Rank < 0 || f.Rank >= ranks {
			return fmt.Errorf("simulation: fault %v: rank out of range [0, %d)", f, ranks)
		}
		if f.At < 0 {
			return fmt.Errorf("simulation: fault %v: negative time", f)
		}
	}
	return nil
}

// arm schedules the plan's faults on the run's loop.
func (p Plan) arm(r *run) {
	for _, f := range p {
		switch f.Kind {
		case Crash:
			r.loop.At(f.At, func() { r.crash(f.Rank) })
		}
	}
}
