package gocomms_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
)

// neighbourSum is a collective no library has: every rank ends with the
// sum of its two ring neighbours' inputs, its own left out.
func neighbourSum(rank, size, n int) *algorithms.Schedule {
	b := algorithms.NewBuilder(rank, size)
	b.Layout(algorithms.Input, []int{n})
	b.Layout(algorithms.Output, []int{n})
	in := algorithms.Region{Buf: algorithms.Input, Len: n}
	out := algorithms.Region{Buf: algorithms.Output, Len: n}
	next, prev := algorithms.RingNext(rank, size), algorithms.RingPrev(rank, size)
	b.Send(next, in)
	b.Send(prev, in)
	b.Recv(prev, out)
	b.RecvReduce(next, out, out)
	return b.Build("neighbour_sum")
}

func TestCustomRunsACollectiveOfTheCallersOwn(t *testing.T) {
	for _, p := range []int{3, 4, 5, 7} {
		err := gocomms.RunLocal(context.Background(), p, func(ctx context.Context, c *gocomms.Comm) error {
			r := c.Rank()
			in, out := []int64{int64(r), int64(10 * r)}, make([]int64, 2)
			sched := neighbourSum(r, p, len(in))
			if err := c.Custom(ctx, sched, []*gocomms.Tensor{gocomms.FromSlice(in)}, []*gocomms.Tensor{gocomms.FromSlice(out)}, gocomms.Sum); err != nil {
				return err
			}
			left, right := int64((r+p-1)%p), int64((r+1)%p)
			if want := []int64{left + right, 10 * (left + right)}; !slices.Equal(out, want) {
				return fmt.Errorf("rank %d: %v, want %v", r, out, want)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%d ranks: %v", p, err)
		}
	}
}

func TestCustomRejectsSchedulesThatDoNotFit(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
		one := []*gocomms.Tensor{gocomms.FromSlice(make([]int64, 2))}
		for _, tc := range []struct {
			name  string
			sched *algorithms.Schedule
			op    gocomms.ReduceOp
			want  string
		}{
			{"none", nil, gocomms.Sum, "no schedule"},
			{"another rank's", neighbourSum((c.Rank()+1)%3, 3, 2), gocomms.Sum, "the schedule is rank"},
			{"larger than the tensors", neighbourSum(c.Rank(), 3, 3), gocomms.Sum, "outside its block of 2 elements"},
			{"no reduction for its reduce", neighbourSum(c.Rank(), 3, 2), gocomms.ReduceOp{}, "invalid reduce op"},
		} {
			err := c.Custom(ctx, tc.sched, one, one, tc.op)
			if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				return fmt.Errorf("%s: %v, want ErrInvalidArgument saying %q", tc.name, err, tc.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCustomRefusesAWrongPart: a part whose steps were edited so that it
// reduces a neighbour's message twice, or receives while it reduces into
// the same elements, is refused before anything moves; the Checked
// option passes a part proved already.
func TestCustomRefusesAWrongPart(t *testing.T) {
	err := gocomms.RunLocal(context.Background(), 3, func(ctx context.Context, c *gocomms.Comm) error {
		one := []*gocomms.Tensor{gocomms.FromSlice(make([]int64, 2))}
		twice := neighbourSum(c.Rank(), 3, 2)
		twice.Steps = append(twice.Steps, twice.Steps[len(twice.Steps)-1])
		racy := neighbourSum(c.Rank(), 3, 2)
		racy.Steps[len(racy.Steps)-1].Deps = nil
		for _, tc := range []struct {
			name  string
			sched *algorithms.Schedule
			want  string
		}{
			{"reduces twice", twice, "want 1: tags count up"},
			{"racy", racy, "race with step"},
		} {
			err := c.Custom(ctx, tc.sched, one, one, gocomms.Sum)
			if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				return fmt.Errorf("%s: %v, want ErrInvalidArgument saying %q", tc.name, err, tc.want)
			}
		}
		in, out := []int64{int64(c.Rank()), 1}, make([]int64, 2)
		return c.Custom(ctx, neighbourSum(c.Rank(), 3, 2), []*gocomms.Tensor{gocomms.FromSlice(in)}, []*gocomms.Tensor{gocomms.FromSlice(out)}, gocomms.Sum, gocomms.Checked())
	})
	if err != nil {
		t.Fatal(err)
	}
}
