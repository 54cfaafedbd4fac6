package gocomms_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/transport"
)

// entrySummary is what the tests compare of an entry; times and error
// texts are checked separately.
type entrySummary struct {
	seq    uint64
	op     gocomms.OpName
	state  gocomms.FlightState
	ranks  []int
	peers  []int
	hasErr bool
}

func summarize(entries []gocomms.FlightEntry) []entrySummary {
	out := make([]entrySummary, len(entries))
	for i, e := range entries {
		out[i] = entrySummary{e.Seq, e.Op, e.State, e.ErrorRanks, e.Peers, e.Error != ""}
	}
	return out
}

func sameSummaries(got, want []entrySummary) bool {
	return slices.EqualFunc(got, want, func(a, b entrySummary) bool {
		return a.seq == b.seq && a.op == b.op && a.state == b.state && a.hasErr == b.hasErr &&
			slices.Equal(a.ranks, b.ranks) && slices.Equal(a.peers, b.peers)
	})
}

// TestFlightRecordTracesOperations runs completed, rejected and timed-out
// operations and reads them back from every rank's recorder.
func TestFlightRecordTracesOperations(t *testing.T) {
	const absent = 2
	timedOut := make(chan struct{})
	var present sync.WaitGroup
	present.Add(2)
	go func() { present.Wait(); close(timedOut) }()
	local(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		if err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1, 2, 3, 4}), gocomms.Sum); err != nil {
			return err
		}
		if err := c.Broadcast(ctx, gocomms.FromSlice([]int64{7, 8}), 1); err != nil {
			return err
		}
		if err := wantErr(c.AllReduce(ctx, nil, gocomms.Sum), gocomms.ErrInvalidArgument, "nil tensor"); err != nil {
			return err
		}
		want := []entrySummary{
			{seq: 0, op: gocomms.OpAllReduce, state: gocomms.FlightCompleted},
			{seq: 1, op: gocomms.OpBroadcast, state: gocomms.FlightCompleted},
			// A rejected operation takes no sequence number of its own.
			{seq: 2, op: gocomms.OpAllReduce, state: gocomms.FlightFailed, hasErr: true},
		}
		if c.Rank() != absent {
			err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(200*time.Millisecond))
			present.Done()
			if e := wantErr(err, gocomms.ErrTimeout, "all_reduce"); e != nil {
				return e
			}
			want = append(want, entrySummary{seq: 2, op: gocomms.OpAllReduce, state: gocomms.FlightTimedOut, ranks: []int{absent}, hasErr: true})
		}
		<-timedOut // the absent rank stays until the others have timed out

		entries := c.FlightRecord()
		if got := summarize(entries); !sameSummaries(got, want) {
			return fmt.Errorf("rank %d recorded %+v, want %+v", c.Rank(), got, want)
		}
		ar, bc, rejected := entries[0], entries[1], entries[2]
		if ar.DType != "float32" || ar.Reduce != "sum" || ar.Root != -1 || ar.InputNumel != 4 || ar.OutputNumel != 4 || ar.InputBytes != 16 || ar.OutputBytes != 16 {
			return fmt.Errorf("all_reduce entry %+v", ar)
		}
		if bc.DType != "int64" || bc.Reduce != "" || bc.Root != 1 || bc.OutputNumel != 2 || bc.OutputBytes != 16 || bc.ID <= ar.ID {
			return fmt.Errorf("broadcast entry %+v after op id %d", bc, ar.ID)
		}
		for _, e := range entries[:2] {
			if e.Issued.IsZero() || e.Started.Before(e.Issued) || e.Ended.Before(e.Started) || e.Error != "" {
				return fmt.Errorf("completed entry %+v: times out of order or an error", e)
			}
		}
		if !rejected.Started.IsZero() || rejected.Ended.IsZero() || !strings.Contains(rejected.Error, "invalid argument") {
			return fmt.Errorf("rejected entry %+v", rejected)
		}
		if c.Rank() == absent {
			return nil
		}
		if to := entries[3]; !strings.Contains(to.Error, "timed out") || to.Started.IsZero() {
			return fmt.Errorf("timed-out entry %+v", to)
		}
		return finalizeExpectingFailures(ctx, c)
	})
}

// TestFlightRecordInFlightAndAborted sees one operation running and one
// queued behind it while a peer stays away, then both aborted.
func TestFlightRecordInFlightAndAborted(t *testing.T) {
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		if c.Rank() == 1 {
			return nil // never joins
		}
		running := c.AllReduceAsync(gocomms.FromSlice([]float32{1}), gocomms.Sum)
		queued := c.BarrierAsync()
		want := []entrySummary{
			{seq: 0, op: gocomms.OpAllReduce, state: gocomms.FlightStarted},
			{seq: 1, op: gocomms.OpBarrier, state: gocomms.FlightIssued},
		}
		var got []entrySummary
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if got = summarize(c.FlightRecord()); sameSummaries(got, want) {
				break
			}
		}
		if !sameSummaries(got, want) {
			return fmt.Errorf("in flight: recorded %+v, want %+v", got, want)
		}
		c.Abort(errors.New("operator said so"))
		for _, w := range []*gocomms.Work{running, queued} {
			if err := wantErr(w.Wait(ctx), gocomms.ErrAborted, string(w.Op().Name)); err != nil {
				return err
			}
		}
		want = []entrySummary{
			{seq: 0, op: gocomms.OpAllReduce, state: gocomms.FlightAborted, hasErr: true},
			{seq: 1, op: gocomms.OpBarrier, state: gocomms.FlightAborted, hasErr: true},
		}
		if got := summarize(c.FlightRecord()); !sameSummaries(got, want) {
			return fmt.Errorf("after abort: recorded %+v, want %+v", got, want)
		}
		return nil
	})
}

// dump decodes c's DumpFlightRecord.
func dump(c *gocomms.Comm) (gocomms.FlightDump, error) {
	var b bytes.Buffer
	var d gocomms.FlightDump
	if err := c.DumpFlightRecord(&b); err != nil {
		return d, err
	}
	err := json.Unmarshal(b.Bytes(), &d)
	return d, err
}

func TestFlightRecordKeepsTheLastEntries(t *testing.T) {
	t.Setenv("TORCHCOMM_FR_BUFFER_SIZE", "3")
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		for range 3 {
			if err := c.Barrier(ctx); err != nil {
				return err
			}
		}
		peer := 1 - c.Rank()
		p2p := gocomms.FromSlice([]int32{5})
		op := gocomms.OpSend
		var err error
		if c.Rank() == 0 {
			err = c.Send(ctx, p2p, peer)
		} else {
			op, err = gocomms.OpRecv, c.Recv(ctx, p2p, peer)
		}
		if err != nil {
			return err
		}
		if err := c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Max); err != nil {
			return err
		}
		want := []entrySummary{
			{seq: 2, op: gocomms.OpBarrier, state: gocomms.FlightCompleted},
			{seq: 3, op: op, state: gocomms.FlightCompleted, peers: []int{peer}},
			{seq: 4, op: gocomms.OpAllReduce, state: gocomms.FlightCompleted},
		}
		d, err := dump(c)
		if err != nil {
			return err
		}
		if got := summarize(d.Entries); !sameSummaries(got, want) || d.Capacity != 3 || d.Dropped != 2 {
			return fmt.Errorf("capacity %d, dropped %d, entries %+v; want 3, 2, %+v", d.Capacity, d.Dropped, got, want)
		}
		return nil
	})
}

// lockedBuffer collects log output written from any goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestFlightRecordSizeFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		value    string // "unset": not set
		capacity int
		warns    bool
	}{
		{"unset", 2000, false},
		{"", 2000, false},
		{"17", 17, false},
		{" 5 ", 5, false},
		{"0", 0, false},
		{"lots", 2000, true},
		{"-4", 2000, true},
		{"99999999999999999999", 2000, true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			if tc.value != "unset" {
				t.Setenv("TORCHCOMM_FR_BUFFER_SIZE", tc.value)
			}
			var logs lockedBuffer
			local(t, 1, func(ctx context.Context, c *gocomms.Comm) error {
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				d, err := dump(c)
				if err != nil {
					return err
				}
				if d.Capacity != tc.capacity || len(d.Entries) != min(tc.capacity, 1) {
					return fmt.Errorf("capacity %d with %d entries, want %d", d.Capacity, len(d.Entries), tc.capacity)
				}
				return nil
			}, gocomms.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if warned := strings.Contains(logs.String(), "TORCHCOMM_FR_BUFFER_SIZE"); warned != tc.warns {
				t.Fatalf("warned %v, want %v; log %q", warned, tc.warns, logs.String())
			}
		})
	}
}

func TestDumpFlightRecordJSON(t *testing.T) {
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		if err := c.ReduceScatterSingle(ctx, gocomms.FromSlice([]float64{0}), gocomms.FromSlice([]float64{1, 2}), gocomms.Sum); err != nil {
			return err
		}
		var b bytes.Buffer
		if err := c.DumpFlightRecord(&b); err != nil {
			return err
		}
		if n := strings.Count(b.String(), "\n"); n != 1 || !strings.HasSuffix(b.String(), "\n") {
			return fmt.Errorf("dump is %d lines, want one: %q", n, b.String())
		}
		var raw struct {
			Comm     string           `json:"comm"`
			Rank     int              `json:"rank"`
			Size     int              `json:"size"`
			Backend  string           `json:"backend"`
			Capacity int              `json:"capacity"`
			Dropped  int              `json:"dropped"`
			Entries  []map[string]any `json:"entries"`
		}
		if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
			return err
		}
		if raw.Comm != "local" || raw.Rank != c.Rank() || raw.Size != 2 || raw.Backend != gocomms.NativeBackend ||
			raw.Capacity != gocomms.DefaultFlightRecordSize || raw.Dropped != 0 || len(raw.Entries) != 1 {
			return fmt.Errorf("dump header %+v", raw)
		}
		e := raw.Entries[0]
		for key, want := range map[string]any{
			"seq": 0.0, "op": "reduce_scatter_single", "dtype": "float64", "reduce_op": "sum", "root": -1.0,
			"input_numel": 2.0, "output_numel": 1.0, "input_bytes": 16.0, "output_bytes": 8.0, "state": "completed",
		} {
			if e[key] != want {
				return fmt.Errorf("entry %q = %v, want %v (entry %v)", key, e[key], want, e)
			}
		}
		if _, ok := e["op_id"].(float64); !ok {
			return fmt.Errorf("entry has no op_id: %v", e)
		}
		for _, key := range []string{"issued", "started", "ended"} {
			s, _ := e[key].(string)
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return fmt.Errorf("entry %q = %q: %v", key, s, err)
			}
		}
		for _, key := range []string{"error", "error_ranks", "peers"} {
			if _, ok := e[key]; ok {
				return fmt.Errorf("completed collective has %q: %v", key, e)
			}
		}
		return nil
	})
}

// TestDumpFlightRecordsListsLiveComms finds every rank's communicator in
// the process-wide dump while it lives, and none after Finalize.
func TestDumpFlightRecordsListsLiveComms(t *testing.T) {
	ids := make([]uint64, 2)
	var dumped []gocomms.FlightDump
	local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
		w := c.AllReduceAsync(gocomms.FromSlice([]int32{1}), gocomms.Sum)
		ids[c.Rank()] = w.Op().ID
		if err := w.Wait(ctx); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil { // every rank has its id in ids
			return err
		}
		if c.Rank() != 0 {
			return nil
		}
		var b bytes.Buffer
		if err := gocomms.DumpFlightRecords(&b); err != nil {
			return err
		}
		return json.Unmarshal(b.Bytes(), &dumped)
	})
	for r, id := range ids {
		i := slices.IndexFunc(dumped, func(d gocomms.FlightDump) bool {
			return len(d.Entries) > 0 && d.Entries[0].ID == id
		})
		if i < 0 || dumped[i].Rank != r || dumped[i].Entries[0].Op != gocomms.OpAllReduce {
			t.Fatalf("rank %d's communicator (op id %d) not found in %+v", r, id, dumped)
		}
	}

	var b bytes.Buffer
	if err := gocomms.DumpFlightRecords(&b); err != nil {
		t.Fatal(err)
	}
	var after []gocomms.FlightDump
	if err := json.Unmarshal(b.Bytes(), &after); err != nil {
		t.Fatal(err)
	}
	for _, d := range after {
		if len(d.Entries) > 0 && slices.Contains(ids, d.Entries[0].ID) {
			t.Fatalf("finalized communicator still dumped: %+v", d)
		}
	}
}

// TestDroppedCommsLeaveTheDump: a communicator dropped without Finalize,
// as a simulated job's are, is not kept alive by the process-wide list,
// and leaves the dump once collected.
func TestDroppedCommsLeaveTheDump(t *testing.T) {
	rt := actors.NewRuntime(nil)
	defer rt.Shutdown()
	func() {
		c, err := gocomms.NewComm(context.Background(), gocomms.NativeBackend, gocomms.CPU, "dropped",
			gocomms.WithRank(0), gocomms.WithSize(1), gocomms.WithRuntime(rt), gocomms.WithNetwork(transport.NewInproc()))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AllReduce(context.Background(), gocomms.FromSlice([]int32{1}), gocomms.Sum); err != nil {
			t.Fatal(err)
		}
		c.Abort(errors.New("dropped"))
	}()
	listed := func() bool {
		var b bytes.Buffer
		if err := gocomms.DumpFlightRecords(&b); err != nil {
			t.Fatal(err)
		}
		var dumps []gocomms.FlightDump
		if err := json.Unmarshal(b.Bytes(), &dumps); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(dumps, func(d gocomms.FlightDump) bool { return d.Comm == "dropped" })
	}
	for range 20 {
		if !listed() {
			return
		}
		runtime.GC()
	}
	t.Fatal("a dropped communicator is still in the dump after 20 collections")
}
