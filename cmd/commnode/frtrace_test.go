package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/cmd/commnode/internal/frtrace"
)

// TestFRTraceNamesTheRankThatNeverStarted has rank 2 of three skip an
// all-reduce the others time out in, and reads the files they leave.
func TestFRTraceNamesTheRankThatNeverStarted(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TORCHCOMM_FR_DUMP_TEMP_FILE", filepath.Join(dir, "rank_"))
	err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 2 {
			aborted := make(chan struct{})
			c.RegisterAbortHook(func(error) { close(aborted) })
			if c.IsAborted() { // before the hook was in place
				return nil
			}
			<-aborted // never issues the all-reduce; RunLocal aborts it once rank 0 fails
			return nil
		}
		return c.AllReduce(ctx, gocomms.FromSlice([]float32{1}), gocomms.Sum, gocomms.OpTimeout(300*time.Millisecond))
	})
	if !errors.Is(err, gocomms.ErrTimeout) {
		t.Fatalf("RunLocal: %v, want a timeout", err)
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"fr-trace", dir}, &out, &errOut); code != 0 {
		t.Fatalf("fr-trace exited %d: %s", code, &errOut)
	}
	for _, want := range []string{"last completed by every rank: barrier seq 0", "stuck: all_reduce seq 1", "not_issued:  rank 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the report:\n%s", want, &out)
		}
	}

	out.Reset()
	if code := run([]string{"fr-trace", "--json", "-prefix", "rank_", dir}, &out, &errOut); code != 0 {
		t.Fatalf("fr-trace --json exited %d: %s", code, &errOut)
	}
	var rep frtrace.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Comms, func(c frtrace.Comm) bool { return c.Name == "local" && c.Size == 3 })
	if i < 0 || rep.Comms[i].Stuck == nil || !reflect.DeepEqual(rep.Comms[i].Stuck.By[0], frtrace.StateRanks{State: frtrace.NotIssued, Ranks: []int{2}}) {
		t.Errorf("the JSON report does not name rank 2 as not having issued the stuck op: %s", &out)
	}
}

func TestFRTraceUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"fr-trace"}, &out, &errOut); code != 2 {
		t.Errorf("fr-trace without DIR exited %d, want 2", code)
	}
	if code := run([]string{"fr-trace", t.TempDir()}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "no flight record") {
		t.Errorf("fr-trace on an empty directory exited %d: %s", code, &errOut)
	}
}
