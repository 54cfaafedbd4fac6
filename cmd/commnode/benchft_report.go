//go:build linux

package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ftTimeline is what a run produced, for ftAnalyze.
type ftTimeline struct {
	NP         int
	Start, End time.Time // the first step's completion; when the workers were told to stop
	Warmup     time.Duration
	Records    []ftRecord // in the order each worker printed them
	Faults     []ftFault  // in the order of the kills
}

// ftReport is the result of a run; --json prints it.
type ftReport struct {
	Ranks         int     `json:"ranks"`
	Bytes         int64   `json:"bytes"`
	ComputeMS     float64 `json:"compute_ms"`
	DurationS     float64 `json:"duration_s"`
	KillEveryS    float64 `json:"kill_every_s"`
	ReplaceAfterS float64 `json:"replace_after_s"`
	WarmupS       float64 `json:"warmup_s"`
	StartupS      float64 `json:"startup_s"` // from starting the workers to the first step
	EndS          float64 `json:"end_s"`     // when the workers were told to stop, from the first step

	FailureFree  ftWindow `json:"failure_free"`
	UnderFaults  ftWindow `json:"under_faults"`
	Ratio        float64  `json:"ratio"` // under_faults.rate / failure_free.rate
	MedianStepMS float64  `json:"median_step_ms"`

	Faults []ftFaultReport `json:"faults"`

	Steps             int   `json:"steps"` // distinct steps completed
	FirstStep         int64 `json:"first_step"`
	LastStep          int64 `json:"last_step"`
	FinalContributors int   `json:"final_contributors"`
	Wrong             int64 `json:"wrong"`        // wrong elements, over every worker and step
	Inconsistent      int   `json:"inconsistent"` // see ftAnalyze
	Rejoins           int   `json:"rejoins"`
	Stragglers        int   `json:"stragglers"` // workers killed past the grace period at the end

	Workers  []ftWorkerReport `json:"workers"`
	OK       bool             `json:"ok"`
	Problems []string         `json:"problems,omitempty"`
}

// ftWindow is a stretch of the run and the steps completed in it.
type ftWindow struct {
	FromS float64 `json:"from_s"` // from the first step
	ToS   float64 `json:"to_s"`
	Steps int     `json:"steps"`
	Rate  float64 `json:"rate"` // steps per second
}

// ftFaultReport is one fault: the kill, the recovery and the regrowth.
type ftFaultReport struct {
	AtS  float64 `json:"at_s"` // the kill, from the first step
	Slot int     `json:"slot"`
	Pid  int     `json:"pid"`
	// RecoveryMS is from the kill to the first step completed after it,
	// less the median failure-free step; null if no step came.
	RecoveryMS   *float64 `json:"recovery_ms"`
	RecoveryStep int64    `json:"recovery_step"`
	Contributors int      `json:"contributors"` // of the recovery step
	// LongestStepMS is the longest step from the recovery step to the
	// first at full size again: the one that absorbed the failure.
	LongestStepMS float64 `json:"longest_step_ms"`
	// ReplacedAtS is when the replacement started; null if none did.
	ReplacedAtS    *float64 `json:"replaced_at_s"`
	ReplacementPid int      `json:"replacement_pid,omitempty"`
	// RegrowMS is from the replacement's start to the first step at full
	// size it took part in; null if it never did.
	RegrowMS *float64 `json:"regrow_ms"`
}

// ftWorkerReport is a worker process and how it ended.
type ftWorkerReport struct {
	Slot        int     `json:"slot"`
	Pid         int     `json:"pid"`
	Replacement bool    `json:"replacement"`
	StartedS    float64 `json:"started_s"`
	Steps       int     `json:"steps"`
	Killed      bool    `json:"killed"`
	Straggler   bool    `json:"straggler"`
	Status      string  `json:"status"`
}

// ftStep is a step as the first worker to complete it reported it.
type ftStep struct {
	Step         int64
	T            time.Time
	Contributors int
}

// ftAnalyze computes the report's figures. Steps are deduplicated by
// number, each taking its earliest completion. Inconsistent counts what
// a correct run never shows: a step whose reports disagree on the
// contributors, a worker whose steps do not strictly increase, a step
// number missing between the first and the last, and a replacement whose
// first step is not past the last step completed before it started.
func ftAnalyze(tl ftTimeline) *ftReport {
	a := &ftAnalysis{tl: tl, r: &ftReport{Ranks: tl.NP, FirstStep: -1, LastStep: -1}}
	a.collect()
	if tl.Start.IsZero() {
		return a.r
	}
	a.rates()
	for _, f := range tl.Faults {
		a.r.Faults = append(a.r.Faults, a.fault(f))
	}
	if a.r.Wrong > 0 {
		a.problem("%d wrong elements", a.r.Wrong)
	}
	if a.r.Inconsistent > 0 {
		a.problem("%d inconsistencies between the workers' steps", a.r.Inconsistent)
	}
	return a.r
}

// ftAnalysis is ftAnalyze's report in the making, and the steps it is
// made from.
type ftAnalysis struct {
	tl      ftTimeline
	r       *ftReport
	steps   []ftStep // by number
	byStep  map[int64]*ftStep
	index   map[int64]int // of steps, by number
	firstOf map[int]int64 // each worker's first step, by pid
	median  time.Duration // of the failure-free steps
}

func (a *ftAnalysis) problem(format string, args ...any) {
	a.r.Problems = append(a.r.Problems, fmt.Sprintf(format, args...))
}

func (a *ftAnalysis) since(t time.Time) float64 { return t.Sub(a.tl.Start).Seconds() }

// collect gathers the records' steps, counting rejoins, wrong elements
// and inconsistencies.
func (a *ftAnalysis) collect() {
	r := a.r
	a.byStep, a.firstOf = map[int64]*ftStep{}, map[int]int64{}
	contrib := map[int64]map[int]bool{}
	last := map[int]int64{}
	for _, rec := range a.tl.Records {
		if rec.Event != "" {
			if rec.Event == "rejoin" {
				r.Rejoins++
			}
			continue
		}
		r.Wrong += rec.Wrong
		if l, ok := last[rec.Pid]; ok && rec.Step <= l {
			r.Inconsistent++
		}
		last[rec.Pid] = rec.Step
		if _, ok := a.firstOf[rec.Pid]; !ok {
			a.firstOf[rec.Pid] = rec.Step
		}
		t := time.Unix(0, rec.T)
		s := a.byStep[rec.Step]
		if s == nil {
			s = &ftStep{Step: rec.Step, T: t, Contributors: rec.Contributors}
			a.byStep[rec.Step] = s
			contrib[rec.Step] = map[int]bool{}
		} else if t.Before(s.T) {
			s.T, s.Contributors = t, rec.Contributors
		}
		contrib[rec.Step][rec.Contributors] = true
	}
	for n, s := range a.byStep {
		a.steps = append(a.steps, *s)
		if len(contrib[n]) > 1 {
			r.Inconsistent++
		}
	}
	a.order()
}

// order sorts the steps by number and sums them up in the report.
func (a *ftAnalysis) order() {
	steps, r := a.steps, a.r
	slices.SortFunc(steps, func(x, y ftStep) int { return cmp.Compare(x.Step, y.Step) })
	a.index = make(map[int64]int, len(steps))
	for i, s := range steps {
		a.index[s.Step] = i
	}
	r.Steps = len(steps)
	if len(steps) > 0 {
		r.FirstStep, r.LastStep = steps[0].Step, steps[len(steps)-1].Step
		r.FinalContributors = steps[len(steps)-1].Contributors
		r.Inconsistent += int(r.LastStep-r.FirstStep+1) - len(steps)
	}
}

// rates measures the step rate with and without faults, past the
// warm-up, and the median failure-free step.
func (a *ftAnalysis) rates() {
	tl, r := a.tl, a.r
	r.EndS = a.since(tl.End)
	from := tl.Start.Add(tl.Warmup)
	firstKill := tl.End
	if len(tl.Faults) > 0 {
		firstKill = tl.Faults[0].At
	}
	r.FailureFree = a.window(from, firstKill, false)
	r.UnderFaults = a.window(from, tl.End, true)
	if r.FailureFree.Rate > 0 {
		r.Ratio = r.UnderFaults.Rate / r.FailureFree.Rate
	}
	var gaps []time.Duration
	for i := 1; i < len(a.steps); i++ {
		s, t := a.steps[i-1], a.steps[i]
		if t.Step == s.Step+1 && !s.T.Before(from) && t.T.Before(firstKill) {
			gaps = append(gaps, t.T.Sub(s.T))
		}
	}
	a.median = medianDuration(gaps)
	r.MedianStepMS = ms(a.median)
}

// window counts the steps from from to to (closed: including to).
func (a *ftAnalysis) window(from, to time.Time, closed bool) ftWindow {
	w := ftWindow{FromS: a.since(from), ToS: a.since(to)}
	for _, s := range a.steps {
		if !s.T.Before(from) && (s.T.Before(to) || closed && s.T.Equal(to)) {
			w.Steps++
		}
	}
	if d := to.Sub(from).Seconds(); d > 0 {
		w.Rate = float64(w.Steps) / d
	}
	return w
}

// fault reports f: the recovery from the kill, the replacement's
// regrowth and the longest step between.
func (a *ftAnalysis) fault(f ftFault) ftFaultReport {
	fr := ftFaultReport{AtS: a.since(f.At), Slot: f.Slot, Pid: f.Pid, RecoveryStep: -1}
	recovery := slices.IndexFunc(a.steps, func(s ftStep) bool { return s.T.After(f.At) })
	if recovery >= 0 {
		s := a.steps[recovery]
		fr.RecoveryMS = ptr(ms(max(0, s.T.Sub(f.At)-a.median)))
		fr.RecoveryStep, fr.Contributors = s.Step, s.Contributors
	} else {
		a.problem("no step completed after the kill at %.2fs", fr.AtS)
	}
	regrown := len(a.steps) - 1 // the index of the step at full size again
	if f.Replacement != 0 {
		regrown = a.replacement(f, &fr)
	}
	if recovery >= 0 {
		var longest time.Duration
		for i := max(recovery, 1); i <= regrown; i++ {
			if a.steps[i].Step == a.steps[i-1].Step+1 {
				longest = max(longest, a.steps[i].T.Sub(a.steps[i-1].T))
			}
		}
		fr.LongestStepMS = ms(longest)
	}
	return fr
}

// replacement reports f's replacement in fr, and returns the index of
// the first step at full size it took part in (the last step if none).
func (a *ftAnalysis) replacement(f ftFault, fr *ftFaultReport) int {
	fr.ReplacedAtS, fr.ReplacementPid = ptr(a.since(f.ReplacedAt)), f.Replacement
	if first, ok := a.firstOf[f.Replacement]; ok {
		var before int64 = -1
		for _, s := range a.steps {
			if s.T.Before(f.ReplacedAt) {
				before = max(before, s.Step)
			}
		}
		if first <= before {
			a.r.Inconsistent++
		}
	}
	for _, rec := range a.tl.Records {
		if rec.Pid == f.Replacement && rec.Event == "" && rec.Contributors == a.tl.NP {
			fr.RegrowMS = ptr(ms(a.byStep[rec.Step].T.Sub(f.ReplacedAt)))
			return a.index[rec.Step]
		}
	}
	a.problem("the replacement started at %.2fs never took part in a step at full size", *fr.ReplacedAtS)
	return len(a.steps) - 1
}

func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr[T any](v T) *T { return &v }

// writeTable prints the report for people.
func (r *ftReport) writeTable(w io.Writer) {
	fmt.Fprintf(w, "# gocomms bench --ft: %d ranks, %d B float32 all-reduced per step, compute %v\n",
		r.Ranks, r.Bytes, time.Duration(r.ComputeMS*float64(time.Millisecond)))
	plan, faults := "no faults", ""
	if r.KillEveryS > 0 {
		faults = "under faults"
		plan = fmt.Sprintf("a worker SIGKILLed every %v, replaced after %v",
			seconds(r.KillEveryS), seconds(r.ReplaceAfterS))
	}
	fmt.Fprintf(w, "# %v from the first step (%.2fs after start), %s; rates leave out the first %v\n",
		seconds(r.DurationS), r.StartupS, plan, seconds(r.WarmupS))
	fmt.Fprintln(w, "#")
	fmt.Fprintf(w, "# %-14s %9s %9s %8s %9s\n", "window", "from (s)", "to (s)", "steps", "steps/s")
	for _, x := range []struct {
		name string
		w    ftWindow
	}{{"failure-free", r.FailureFree}, {cmp.Or(faults, "whole run"), r.UnderFaults}} {
		fmt.Fprintf(w, "  %-14s %9.2f %9.2f %8d %9.2f\n", x.name, x.w.FromS, x.w.ToS, x.w.Steps, x.w.Rate)
	}
	fmt.Fprintf(w, "# kept %.1f%% of the failure-free step rate (goal: 90%%); median failure-free step %.1f ms\n",
		100*r.Ratio, r.MedianStepMS)
	if len(r.Faults) > 0 {
		fmt.Fprintln(w, "#")
		fmt.Fprintf(w, "# %5s %8s %5s %8s %13s %7s %12s %13s %12s %11s\n",
			"fault", "at (s)", "slot", "pid", "recovery (ms)", "step", "contributors", "longest (ms)", "replaced (s)", "regrow (ms)")
		opt := func(p *float64, format string) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprintf(format, *p)
		}
		for i, f := range r.Faults {
			step, longest := "-", "-"
			if f.RecoveryMS != nil {
				step, longest = strconv.FormatInt(f.RecoveryStep, 10), fmt.Sprintf("%.1f", f.LongestStepMS)
			}
			fmt.Fprintf(w, "  %5d %8.2f %5d %8d %13s %7s %12d %13s %12s %11s\n", i+1, f.AtS, f.Slot, f.Pid,
				opt(f.RecoveryMS, "%.1f"), step, f.Contributors, longest, opt(f.ReplacedAtS, "%.2f"), opt(f.RegrowMS, "%.1f"))
		}
	}
	fmt.Fprintln(w, "#")
	fmt.Fprintf(w, "# steps %d (%d to %d), final contributors %d, wrong elements %d, inconsistencies %d, rejoins %d, stragglers %d\n",
		r.Steps, r.FirstStep, r.LastStep, r.FinalContributors, r.Wrong, r.Inconsistent, r.Rejoins, r.Stragglers)
	if r.OK {
		fmt.Fprintln(w, "# OK")
	} else {
		fmt.Fprintf(w, "# FAILED: %s\n", strings.Join(r.Problems, "; "))
	}
}

// seconds prints a number of seconds as a duration.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
