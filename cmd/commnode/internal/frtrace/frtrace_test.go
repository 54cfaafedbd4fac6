package frtrace

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
)

// op is an entry: seq, name, state, with the arguments of a float32
// all-reduce of 4 elements unless changed.
func op(seq uint64, name gocomms.OpName, state gocomms.FlightState, change ...func(*gocomms.FlightEntry)) gocomms.FlightEntry {
	e := gocomms.FlightEntry{ID: seq + 1, Seq: seq, Op: name, DType: "float32", Reduce: "sum", Root: -1,
		InputNumel: 4, OutputNumel: 4, State: state}
	for _, f := range change {
		f(&e)
	}
	return e
}

func dumpOf(rank, size int, entries ...gocomms.FlightEntry) gocomms.FlightDump {
	ranks := make([]int, size)
	for i := range ranks {
		ranks[i] = i
	}
	return gocomms.FlightDump{Comm: "world", Rank: rank, Size: size, Ranks: ranks, Entries: entries}
}

const (
	completed = gocomms.FlightCompleted
	started   = gocomms.FlightStarted
	timeout   = gocomms.FlightTimedOut
)

func TestAnalyze(t *testing.T) {
	ar, bc := gocomms.OpAllReduce, gocomms.OpBroadcast
	for _, c := range []struct {
		name  string
		dumps []gocomms.FlightDump
		want  Comm
	}{{
		name: "all agree",
		dumps: []gocomms.FlightDump{
			dumpOf(0, 2, op(0, ar, completed), op(1, ar, completed)),
			dumpOf(1, 2, op(0, ar, completed), op(1, ar, completed)),
		},
		want: Comm{Name: "world", Size: 2, Ranks: []int{0, 1}, Dumped: []int{0, 1}, LastCompleted: &OpRef{1, "all_reduce"}},
	}, {
		name: "rank that never started",
		dumps: []gocomms.FlightDump{
			dumpOf(0, 3, op(0, ar, completed), op(1, bc, timeout)),
			dumpOf(1, 3, op(0, ar, completed), op(1, bc, started)),
			dumpOf(2, 3, op(0, ar, completed)),
		},
		want: Comm{Name: "world", Size: 3, Ranks: []int{0, 1, 2}, Dumped: []int{0, 1, 2}, LastCompleted: &OpRef{0, "all_reduce"},
			Stuck: &Stuck{OpRef{1, "broadcast"}, []StateRanks{{NotIssued, []int{2}}, {"started", []int{1}}, {"timed_out", []int{0}}}}},
	}, {
		name: "missing rank, nothing completed",
		dumps: []gocomms.FlightDump{
			dumpOf(0, 3, op(0, ar, timeout)),
			dumpOf(1, 3),
		},
		want: Comm{Name: "world", Size: 3, Ranks: []int{0, 1, 2}, Dumped: []int{0, 1}, Missing: []int{2},
			Stuck: &Stuck{OpRef{0, "all_reduce"}, []StateRanks{{NotIssued, []int{1}}, {"timed_out", []int{0}}}}},
	}, {
		name: "mismatch",
		dumps: []gocomms.FlightDump{
			dumpOf(0, 3, op(0, ar, completed), op(1, ar, timeout)),
			dumpOf(1, 3, op(0, ar, completed), op(1, ar, timeout)),
			dumpOf(2, 3, op(0, ar, completed, func(e *gocomms.FlightEntry) { e.DType, e.InputNumel, e.OutputNumel = "int64", 8, 8 }),
				op(1, bc, timeout, func(e *gocomms.FlightEntry) { e.Root, e.Reduce = 0, "" })),
		},
		want: Comm{Name: "world", Size: 3, Ranks: []int{0, 1, 2}, Dumped: []int{0, 1, 2}, LastCompleted: &OpRef{0, "all_reduce"},
			Stuck: &Stuck{OpRef{1, "all_reduce"}, []StateRanks{{"timed_out", []int{0, 1, 2}}}},
			Mismatches: []Mismatch{
				{0, []string{"dtype", "count"}, []ArgGroup{
					{Args{"all_reduce", "float32", "sum", -1, 4}, []int{0, 1}},
					{Args{"all_reduce", "int64", "sum", -1, 8}, []int{2}}}},
				{1, []string{"op", "reduce_op", "root"}, []ArgGroup{
					{Args{"all_reduce", "float32", "sum", -1, 4}, []int{0, 1}},
					{Args{"broadcast", "float32", "", 0, 4}, []int{2}}}},
			}},
	}, {
		name: "dropped entries and point-to-point",
		dumps: []gocomms.FlightDump{
			dumpOf(0, 2, op(0, ar, completed), op(1, gocomms.OpSend, completed, func(e *gocomms.FlightEntry) { e.Peers = []int{1} }), op(2, ar, completed)),
			dumpOf(1, 2, op(1, gocomms.OpRecv, completed, func(e *gocomms.FlightEntry) { e.Peers, e.InputNumel = []int{0}, 0 }), op(2, ar, completed)),
		},
		want: Comm{Name: "world", Size: 2, Ranks: []int{0, 1}, Dumped: []int{0, 1}, LastCompleted: &OpRef{2, "all_reduce"}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			rep := Analyze(c.dumps)
			if len(rep.Comms) != 1 || !reflect.DeepEqual(rep.Comms[0], c.want) {
				got, _ := json.Marshal(rep)
				want, _ := json.Marshal(c.want)
				t.Errorf("got  %s\nwant %s", got, want)
			}
			var b bytes.Buffer
			if err := Write(&b, rep); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", &b)
		})
	}
}

// TestAnalyzeTellsCommunicatorsApart keeps two communicators of one name
// but other members apart, and takes the fuller of two dumps of one rank.
func TestAnalyzeTellsCommunicatorsApart(t *testing.T) {
	a := dumpOf(0, 2, op(0, gocomms.OpAllReduce, completed))
	b := a
	b.Ranks = []int{2, 3}
	early := dumpOf(0, 2)
	rep := Analyze([]gocomms.FlightDump{a, early, b})
	if len(rep.Comms) != 2 || rep.Comms[0].LastCompleted == nil || rep.Comms[1].LastCompleted == nil {
		got, _ := json.Marshal(rep)
		t.Errorf("got %s, want two communicators, each with its all_reduce", got)
	}
}

func TestWriteNamesTheStuckOp(t *testing.T) {
	rep := Analyze([]gocomms.FlightDump{
		dumpOf(0, 2, op(0, gocomms.OpAllReduce, completed), op(1, gocomms.OpBarrier, timeout)),
		dumpOf(1, 2, op(0, gocomms.OpAllReduce, completed)),
	})
	var b bytes.Buffer
	if err := Write(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"last completed by every rank: all_reduce seq 0", "stuck: barrier seq 1", "not_issued:  rank 1", "timed_out:   rank 0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, &b)
		}
	}
}

func TestParse(t *testing.T) {
	one, _ := json.Marshal(dumpOf(1, 2, op(0, gocomms.OpAllReduce, completed)))
	arr, _ := json.Marshal([]gocomms.FlightDump{dumpOf(0, 2)})
	dumps, err := Parse(strings.NewReader(string(arr) + "\n" + string(one) + "\n"))
	if err != nil || len(dumps) != 2 || dumps[1].Rank != 1 || len(dumps[1].Entries) != 1 {
		t.Fatalf("Parse: %+v, %v", dumps, err)
	}
	for _, bad := range []string{
		`"a string"`,
		`{"comm":"x","rank":2,"size":2}`,
		`{"comm":"x","rank":0,"size":0}`,
		`{"comm":"x","rank":0,"size":2,"ranks":[0]}`,
		`[{"comm":"x","rank":0,"size":2}`,
	} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%s) took it", bad)
		}
	}
}

// FuzzParse feeds the parser what a file could hold: it must not panic,
// and what it accepts the analysis must take.
func FuzzParse(f *testing.F) {
	arr, _ := json.Marshal([]gocomms.FlightDump{dumpOf(0, 2, op(0, gocomms.OpAllReduce, completed), op(1, gocomms.OpBroadcast, timeout))})
	f.Add(arr)
	f.Add([]byte(`{"comm":"x","rank":0,"size":1,"entries":[{"seq":0,"op":"barrier","state":"started"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dumps, err := Parse(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, Analyze(dumps)); err != nil {
			t.Fatal(err)
		}
	})
}
