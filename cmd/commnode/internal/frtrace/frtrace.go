package frtrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gocomms/gocomms"
)

// maxSize bounds the communicator size a dump may claim: the analysis
// makes room per rank, and dumps come from outside.
const maxSize = 1 << 20

// Parse reads the flight records in r: JSON arrays of dumps, as
// gocomms.DumpFlightRecordFiles and SIGUSR1 write them, or single dumps
// (Comm.DumpFlightRecord), one after another.
func Parse(r io.Reader) ([]gocomms.FlightDump, error) {
	dec := json.NewDecoder(r)
	var dumps []gocomms.FlightDump
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return dumps, nil
		} else if err != nil {
			return nil, fmt.Errorf("flight record: %w", err)
		}
		var some []gocomms.FlightDump
		switch {
		case bytes.HasPrefix(raw, []byte("[")):
			if err := json.Unmarshal(raw, &some); err != nil {
				return nil, fmt.Errorf("flight record: %w", err)
			}
		case bytes.HasPrefix(raw, []byte("{")):
			var d gocomms.FlightDump
			if err := json.Unmarshal(raw, &d); err != nil {
				return nil, fmt.Errorf("flight record: %w", err)
			}
			some = append(some, d)
		default:
			return nil, errors.New("flight record: neither a dump nor an array of dumps")
		}
		for _, d := range some {
			if err := check(&d); err != nil {
				return nil, err
			}
		}
		dumps = append(dumps, some...)
	}
}

// check rejects a dump the analysis cannot place.
func check(d *gocomms.FlightDump) error {
	switch {
	case d.Size < 1 || d.Size > maxSize:
		return fmt.Errorf("flight record of %q: size %d out of range", d.Comm, d.Size)
	case d.Rank < 0 || d.Rank >= d.Size:
		return fmt.Errorf("flight record of %q: rank %d out of range for size %d", d.Comm, d.Rank, d.Size)
	case d.Ranks != nil && len(d.Ranks) != d.Size:
		return fmt.Errorf("flight record of %q: %d global ranks for size %d", d.Comm, len(d.Ranks), d.Size)
	}
	return nil
}

// Report is what the ranks of each communicator disagree on.
type Report struct {
	Comms []Comm `json:"comms"`
}

// Comm is the analysis of one communicator's dumps.
type Comm struct {
	Name    string `json:"comm"`
	Size    int    `json:"size"`
	Ranks   []int  `json:"ranks,omitempty"`   // the global rank of each member
	Dumped  []int  `json:"dumped"`            // the ranks with a dump
	Missing []int  `json:"missing,omitempty"` // the ranks without
	// LastCompleted is the last operation every rank with a dump
	// completed; nil if none.
	LastCompleted *OpRef `json:"last_completed,omitempty"`
	// Stuck is the first operation not every rank with a dump completed:
	// where they part; nil if they all completed everything.
	Stuck      *Stuck     `json:"stuck,omitempty"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
}

// OpRef names an operation.
type OpRef struct {
	Seq uint64 `json:"seq"`
	Op  string `json:"op"`
}

// Stuck is an operation and where each rank stands in it.
type Stuck struct {
	OpRef
	By []StateRanks `json:"by"` // in the order of States, those with ranks
}

// StateRanks are the ranks in one state of an operation.
type StateRanks struct {
	State string `json:"state"`
	Ranks []int  `json:"ranks"`
}

// The states of a rank in an operation beyond the recorder's own: it never
// issued it (its record ends before), or its record does not show it
// (dropped from its ring, or an operation it had no part in).
const (
	NotIssued   = "not_issued"
	NotRecorded = "not_recorded"
)

// States orders the states in a report, the least advanced first.
var States = []string{NotIssued, string(gocomms.FlightIssued), string(gocomms.FlightStarted),
	string(gocomms.FlightTimedOut), string(gocomms.FlightFailed), string(gocomms.FlightAborted),
	string(gocomms.FlightCompleted), NotRecorded}

// Mismatch is an operation whose arguments differ between ranks.
type Mismatch struct {
	Seq    uint64     `json:"seq"`
	Fields []string   `json:"fields"` // those that differ: op, dtype, reduce_op, root, count
	Groups []ArgGroup `json:"groups"` // ranks with the same arguments
}

// ArgGroup is the arguments some ranks gave an operation.
type ArgGroup struct {
	Args
	Ranks []int `json:"ranks"`
}

// Args are the arguments of an operation that every rank must agree on.
// Count is the elements compared: the larger of input and output for most
// collectives, the input of a gather, the output of a scatter; -1 for the
// vector forms, whose counts differ by rank.
type Args struct {
	Op     string `json:"op"`
	DType  string `json:"dtype,omitempty"`
	Reduce string `json:"reduce_op,omitempty"`
	Root   int    `json:"root"`
	Count  int    `json:"count"`
}

// Analyze compares the dumps of each communicator, told apart by name,
// size and members. Of two dumps of one rank, the one that recorded more
// operations counts.
func Analyze(dumps []gocomms.FlightDump) Report {
	type key struct {
		name  string
		size  int
		ranks string
	}
	groups := make(map[key]map[int]*gocomms.FlightDump)
	for i := range dumps {
		d := &dumps[i]
		k := key{d.Comm, d.Size, fmt.Sprint(d.Ranks)}
		if groups[k] == nil {
			groups[k] = make(map[int]*gocomms.FlightDump)
		}
		if old := groups[k][d.Rank]; old == nil || recorded(d) >= recorded(old) {
			groups[k][d.Rank] = d
		}
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b key) int {
		return cmpOr(strings.Compare(a.name, b.name), a.size-b.size, strings.Compare(a.ranks, b.ranks))
	})
	var rep Report
	for _, k := range keys {
		rep.Comms = append(rep.Comms, analyzeComm(groups[k]))
	}
	return rep
}

func cmpOr(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

func recorded(d *gocomms.FlightDump) uint64 { return d.Dropped + uint64(len(d.Entries)) }

// rankRecord is one rank's entries by sequence number.
type rankRecord struct {
	bySeq    map[uint64]*gocomms.FlightEntry
	min, max uint64
}

func newRankRecord(d *gocomms.FlightDump) rankRecord {
	r := rankRecord{bySeq: make(map[uint64]*gocomms.FlightEntry, len(d.Entries))}
	for i := range d.Entries {
		e := &d.Entries[i]
		// An operation refused before issue shares its number with the
		// next one, issued after it: the later one counts.
		if old := r.bySeq[e.Seq]; old == nil || e.ID >= old.ID {
			r.bySeq[e.Seq] = e
		}
		if i == 0 || e.Seq < r.min {
			r.min = e.Seq
		}
		r.max = max(r.max, e.Seq)
	}
	return r
}

// state is where the rank stands in operation seq.
func (r rankRecord) state(seq uint64) string {
	if e := r.bySeq[seq]; e != nil {
		return string(e.State)
	}
	if len(r.bySeq) == 0 || seq > r.max {
		return NotIssued
	}
	return NotRecorded
}

// done reports whether a rank in state is past the operation: it
// completed it, or its record has moved on without it.
func done(state string) bool {
	return state == string(gocomms.FlightCompleted) || state == NotRecorded
}

func analyzeComm(byRank map[int]*gocomms.FlightDump) Comm {
	var c Comm
	records := make(map[int]rankRecord, len(byRank))
	seqs := make(map[uint64]bool)
	for r, d := range byRank {
		c.Name, c.Size, c.Ranks = d.Comm, d.Size, d.Ranks
		records[r] = newRankRecord(d)
		for s := range records[r].bySeq {
			seqs[s] = true
		}
	}
	c.Dumped = slices.Sorted(maps.Keys(byRank))
	for r := range c.Size {
		if byRank[r] == nil {
			c.Missing = append(c.Missing, r)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(seqs)) {
		states := make(map[string][]int)
		for _, r := range c.Dumped {
			st := records[r].state(s)
			states[st] = append(states[st], r)
		}
		all := true
		for st := range states {
			all = all && done(st)
		}
		switch {
		case all && len(states[string(gocomms.FlightCompleted)]) > 0:
			c.LastCompleted = &OpRef{s, opName(records, c.Dumped, s)}
		case !all && c.Stuck == nil:
			c.Stuck = &Stuck{OpRef: OpRef{s, opName(records, c.Dumped, s)}}
			for _, st := range States {
				if len(states[st]) > 0 {
					c.Stuck.By = append(c.Stuck.By, StateRanks{st, states[st]})
				}
			}
		}
		if m, ok := mismatch(records, c.Dumped, s); ok {
			c.Mismatches = append(c.Mismatches, m)
		}
	}
	return c
}

// opName is the name most ranks recorded for seq.
func opName(records map[int]rankRecord, ranks []int, seq uint64) string {
	votes := make(map[string]int)
	best := ""
	for _, r := range ranks {
		if e := records[r].bySeq[seq]; e != nil {
			n := string(e.Op)
			votes[n]++
			if votes[n] > votes[best] || votes[n] == votes[best] && n < best {
				best = n
			}
		}
	}
	return best
}

// mismatch compares the arguments the ranks gave collective seq.
func mismatch(records map[int]rankRecord, ranks []int, seq uint64) (Mismatch, bool) {
	var groups []ArgGroup
	for _, r := range ranks {
		e := records[r].bySeq[seq]
		if e == nil || pointToPoint(e) {
			continue
		}
		a := argsOf(e)
		if i := slices.IndexFunc(groups, func(g ArgGroup) bool { return g.Args == a }); i >= 0 {
			groups[i].Ranks = append(groups[i].Ranks, r)
		} else {
			groups = append(groups, ArgGroup{a, []int{r}})
		}
	}
	if len(groups) < 2 {
		return Mismatch{}, false
	}
	m := Mismatch{Seq: seq, Groups: groups}
	for _, f := range []struct {
		name string
		get  func(Args) any
	}{
		{"op", func(a Args) any { return a.Op }},
		{"dtype", func(a Args) any { return a.DType }},
		{"reduce_op", func(a Args) any { return a.Reduce }},
		{"root", func(a Args) any { return a.Root }},
		{"count", func(a Args) any { return a.Count }},
	} {
		if slices.ContainsFunc(groups[1:], func(g ArgGroup) bool { return f.get(g.Args) != f.get(groups[0].Args) }) {
			m.Fields = append(m.Fields, f.name)
		}
	}
	return m, true
}

func pointToPoint(e *gocomms.FlightEntry) bool {
	switch e.Op {
	case gocomms.OpSend, gocomms.OpRecv, gocomms.OpBatch:
		return true
	}
	return len(e.Peers) > 0
}

func argsOf(e *gocomms.FlightEntry) Args {
	a := Args{Op: string(e.Op), DType: e.DType, Reduce: e.Reduce, Root: e.Root}
	switch {
	case strings.HasSuffix(a.Op, "_v") || strings.HasSuffix(a.Op, "_v_single"):
		a.Count = -1
	case e.Op == gocomms.OpGather:
		a.Count = e.InputNumel
	case e.Op == gocomms.OpScatter:
		a.Count = e.OutputNumel
	default:
		a.Count = max(e.InputNumel, e.OutputNumel)
	}
	return a
}

// Write writes rep for a person to read.
func Write(w io.Writer, rep Report) error {
	var b strings.Builder
	if len(rep.Comms) == 0 {
		b.WriteString("no flight records\n")
	}
	for _, c := range rep.Comms {
		fmt.Fprintf(&b, "communicator %q, %d ranks: dumps from %s\n", c.Name, c.Size, rankList(c.Dumped))
		if len(c.Missing) > 0 {
			fmt.Fprintf(&b, "  no dump from %s\n", rankList(c.Missing))
		}
		if c.LastCompleted != nil {
			fmt.Fprintf(&b, "  last completed by every rank: %s seq %d\n", c.LastCompleted.Op, c.LastCompleted.Seq)
		} else {
			b.WriteString("  no operation completed by every rank\n")
		}
		if s := c.Stuck; s != nil {
			fmt.Fprintf(&b, "  stuck: %s seq %d\n", s.Op, s.Seq)
			for _, sr := range s.By {
				fmt.Fprintf(&b, "    %-12s %s\n", sr.State+":", rankList(sr.Ranks))
			}
		} else if len(c.Dumped) > 0 {
			b.WriteString("  every rank completed every operation recorded\n")
		}
		for _, m := range c.Mismatches {
			fmt.Fprintf(&b, "  mismatch at seq %d in %s:", m.Seq, strings.Join(m.Fields, ", "))
			for _, g := range m.Groups {
				fmt.Fprintf(&b, " %s(dtype %s, reduce %s, root %d, count %d) on %s;", g.Op, orNone(g.DType), orNone(g.Reduce), g.Root, g.Count, rankList(g.Ranks))
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rankList is "rank 3" or "ranks 0 1 2".
func rankList(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	s := fmt.Sprint(ranks)
	return "ranks " + s[1:len(s)-1]
}
