package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/commtest"
	"github.com/gocomms/gocomms/tensor"
)

// casesFor is how many cases verify runs at counts.
func casesFor(t *testing.T, counts ...int) int {
	t.Helper()
	cs, err := commtest.Plan{Counts: counts}.Cases()
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// row returns the fields of the table row for collective.
func row(table, collective string) []string {
	for line := range strings.Lines(table) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == collective {
			return f
		}
	}
	return nil
}

func TestVerifyLocal(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		ranks  int
		counts []int
	}{
		{[]string{"-local", "1"}, 1, []int{0, 1, 2, 3, 1000}},
		{[]string{"-local", "3"}, 3, []int{0, 1, 2, 4, 7, 1000}},
		{[]string{"-local", "4", "-counts", "7, 0,7"}, 4, []int{0, 7}},
	} {
		var out, errb bytes.Buffer
		if code := verifyCommand(tc.args, &out, &errb); code != 0 {
			t.Fatalf("verify %q: exit %d, stderr %q", tc.args, code, errb.String())
		}
		want := fmt.Sprintf("verify: %d cases on %d ranks, all correct\n", casesFor(t, tc.counts...), tc.ranks)
		if !strings.HasSuffix(out.String(), want) || strings.Count(out.String(), "verify:") != 1 || errb.Len() > 0 {
			t.Errorf("verify %q printed\n%s\nstderr %q; want one table ending %q", tc.args, out.String(), errb.String(), want)
		}
		if !strings.Contains(out.String(), "all_to_all_v_single") {
			t.Errorf("verify %q: the table lacks all_to_all_v_single:\n%s", tc.args, out.String())
		}
	}
}

// TestVerifyAgreesOnWrongResults has rank 1 corrupt its input to every
// gather, so that only each gather's root sees a wrong result: every rank
// must still fail, and rank 0 alone print the table.
func TestVerifyAgreesOnWrongResults(t *testing.T) {
	const ranks = 3
	v := verifier{counts: []int{0, 2}}
	outs, errs := make([]bytes.Buffer, ranks), make([]bytes.Buffer, ranks)
	oks := make([]bool, ranks)
	err := gocomms.RunLocal(context.Background(), ranks, func(ctx context.Context, c *gocomms.Comm) error {
		r := c.Rank()
		if r == 1 {
			c.RegisterPreHook(func(op *gocomms.Op) error {
				if in := op.Inputs; op.Name == gocomms.OpGather && in[0].Numel() > 0 {
					in[0].SetInt64(0, 1-in[0].Int64At(0))
				}
				return nil
			})
		}
		var err error
		oks[r], err = v.verify(ctx, c, &outs[r], &errs[r])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dtypes := len(tensor.DTypes()) // one gather case per dtype has elements to corrupt
	want := fmt.Sprintf("verify: %d of %d cases WRONG\n", dtypes, casesFor(t, 0, 2))
	wantRow := []string{"gather", strconv.Itoa(2 * dtypes), strconv.Itoa(dtypes)}
	if !strings.HasSuffix(outs[0].String(), want) || !slices.Equal(row(outs[0].String(), "gather"), wantRow) {
		t.Errorf("rank 0 printed\n%s\nwant a row %q and %q", outs[0].String(), wantRow, want)
	}
	for r := range ranks {
		if oks[r] {
			t.Errorf("rank %d reports success", r)
		}
		if r > 0 && outs[r].Len() > 0 {
			t.Errorf("rank %d printed %q", r, outs[r].String())
		}
		for line := range strings.Lines(errs[r].String()) {
			if !strings.HasPrefix(line, "commnode verify: rank "+strconv.Itoa(r)+": gather ") {
				t.Errorf("rank %d's stderr has %q", r, line)
			}
		}
	}
}

func TestVerifyJoinsFromEnvironment(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback:", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	for k, v := range map[string]string{
		"TORCHCOMM_BOOTSTRAP_RANKSIZE_QUERY_METHOD": "torchrun",
		"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": strconv.Itoa(port),
	} {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	if code := verifyCommand([]string{"-counts", "0,3"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if want := fmt.Sprintf("verify: %d cases on 1 ranks, all correct\n", casesFor(t, 0, 3)); !strings.HasSuffix(out.String(), want) {
		t.Errorf("printed\n%s\nwant it to end %q", out.String(), want)
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-bogus"},
		{"-local", "-1"},
		{"-local", "0"},
		{"-local", "2", "extra"},
		{"-local", "2", "-counts", "1,x"},
		{"-local", "2", "-counts", "1,-3"},
		{"-local", "2", "-counts", "1,,3"},
		{"-local", "2", "-timeout", "0s"},
	} {
		var out, errb bytes.Buffer
		if code := verifyCommand(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: commnode verify") || out.Len() > 0 {
			t.Errorf("verify %q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// TestVerifyReportsUnsupported has every rank decline the bitwise
// all-reduces, as the nccl backend does: verify names them, counts the
// rest, and succeeds.
func TestVerifyReportsUnsupported(t *testing.T) {
	errNo := fmt.Errorf("no bitwise reductions here: %w", gocomms.ErrInvalidArgument)
	v := verifier{counts: []int{0, 2}, unsupported: errNo}
	const ranks = 2
	outs := make([]bytes.Buffer, ranks)
	err := gocomms.RunLocal(context.Background(), ranks, func(ctx context.Context, c *gocomms.Comm) error {
		c.RegisterPreHook(func(op *gocomms.Op) error {
			if op.Name == gocomms.OpAllReduce && slices.Contains([]gocomms.ReduceOp{gocomms.BAnd, gocomms.BOr, gocomms.BXor}, op.Reduce) {
				return errNo
			}
			return nil
		})
		var errb bytes.Buffer
		ok, err := v.verify(ctx, c, &outs[c.Rank()], &errb)
		if err == nil && (!ok || errb.Len() > 0) {
			err = fmt.Errorf("rank %d: ok %v, stderr %q", c.Rank(), ok, errb.String())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var declined []string
	var ints []string
	for _, dt := range tensor.DTypes() {
		if gocomms.BAnd.Supports(dt) == nil {
			declined = append(declined, dt.String()+" (band, bor, bxor)")
			ints = append(ints, dt.String())
		}
	}
	n := 3 * 2 * len(ints) // three ops, two counts
	out := outs[0].String()
	want := fmt.Sprintf("verify: all_reduce: %d cases unsupported by the native backend: %s\n", n, strings.Join(declined, ", "))
	summary := fmt.Sprintf("verify: %d cases on %d ranks, all correct\n", casesFor(t, 0, 2)-n, ranks)
	if !strings.Contains(out, want) || !strings.HasSuffix(out, summary) {
		t.Errorf("printed\n%s\nwant %q and, at the end, %q", out, want, summary)
	}
}
