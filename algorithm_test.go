package gocomms_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/transport"
)

// framesOfAllReduce runs one 4-element all-reduce over 4 ranks and counts
// the collective frames sent.
func framesOfAllReduce(t *testing.T, hint string, opts ...gocomms.Option) int64 {
	t.Helper()
	nw := &countingNetwork{Network: transport.NewInproc()}
	opts = append(opts, gocomms.WithNetwork(nw))
	err := gocomms.RunLocal(context.Background(), 4, func(ctx context.Context, c *gocomms.Comm) error {
		var call []gocomms.CallOption
		if hint != "" {
			call = append(call, gocomms.OpHints(map[string]string{gocomms.HintAlgorithm: hint}))
		}
		return c.AllReduce(ctx, gocomms.FromSlice([]float32{1, 2, 3, 4}), gocomms.Sum, call...)
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return nw.frames.Load()
}

// TestAlgorithmChoice checks where a collective's schedule comes from: an
// operation's hint, else WithAlgorithm, else GOCOMMS_ALGO_<OP>, else the
// selector. Four ranks of a 4-element all-reduce send 8 frames by
// recursive doubling (the selector's choice), 16 by Rabenseifner's
// algorithm and 28 by the ring: 24 and a token from each rank to the one
// it receives from, which only sends to it (algorithms.Acknowledged).
func TestAlgorithmChoice(t *testing.T) {
	if got := framesOfAllReduce(t, ""); got != 8 {
		t.Fatalf("the selector's all-reduce sent %d frames, want recursive doubling's 8", got)
	}
	t.Setenv(gocomms.AlgorithmEnv(gocomms.OpAllReduce), "rabenseifner")
	if got := framesOfAllReduce(t, ""); got != 16 {
		t.Fatalf("with GOCOMMS_ALGO_ALLREDUCE=rabenseifner the all-reduce sent %d frames, want 16", got)
	}
	ring := gocomms.WithAlgorithm(gocomms.OpAllReduce, "ring")
	if got := framesOfAllReduce(t, "", ring); got != 28 {
		t.Fatalf("with WithAlgorithm ring over the environment the all-reduce sent %d frames, want 28", got)
	}
	if got := framesOfAllReduce(t, "recursive_doubling", ring); got != 8 {
		t.Fatalf("with the operation's hint over WithAlgorithm the all-reduce sent %d frames, want 8", got)
	}
}

func TestAlgorithmChoiceRejectsUnknownNames(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []gocomms.Option
		env  string
		want string
	}{
		{"unknown schedule", []gocomms.Option{gocomms.WithAlgorithm(gocomms.OpAllReduce, "fastest")}, "", `"fastest" is no all_reduce algorithm; have ["ring"`},
		{"not a collective", []gocomms.Option{gocomms.WithAlgorithm(gocomms.OpSend, "ring")}, "", `"send"): not a collective`},
		{"unknown in the environment", nil, "pairwise", `GOCOMMS_ALGO_ALLREDUCE: "pairwise" is no all_reduce algorithm`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("GOCOMMS_ALGO_ALLREDUCE", tc.env)
			}
			opts := append([]gocomms.Option{gocomms.WithRank(0), gocomms.WithSize(1)}, tc.opts...)
			c, err := gocomms.NewComm(ctx, gocomms.NativeBackend, gocomms.CPU, "algo", opts...)
			if err == nil {
				c.Finalize(ctx)
				t.Fatal("NewComm accepted it")
			}
			if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want ErrInvalidArgument saying %s", err, tc.want)
			}
		})
	}
}

// registerProcessSchedule registers reduceThenBroadcast in the process's
// registry once, however often the tests run.
var registerProcessSchedule = sync.OnceValue(func() error {
	return gocomms.RegisterAlgorithm(algorithms.AllReduce, "test_process", reduceThenBroadcast)
})

// TestAlgorithmRegistries: a communicator runs the schedules of its
// registry, WithAlgorithms's or else the process's, and no other's. Four
// ranks of a 4-element reduceThenBroadcast send 6 frames.
func TestAlgorithmRegistries(t *testing.T) {
	if err := registerProcessSchedule(); err != nil {
		t.Fatal(err)
	}
	own := algorithms.NewRegistry()
	if err := own.Register(algorithms.AllReduce, "test_own", reduceThenBroadcast); err != nil {
		t.Fatal(err)
	}
	if got := gocomms.Algorithms(algorithms.AllReduce); !slices.Contains(got, "test_process") || slices.Contains(got, "test_own") {
		t.Fatalf("the process's registry lists %q, want test_process and not test_own", got)
	}
	withOwn := gocomms.WithAlgorithms(own)
	for _, tc := range []struct {
		name string
		opts []gocomms.Option
		runs bool
	}{
		{"test_process", nil, true},
		{"test_own", nil, false},
		{"test_own", []gocomms.Option{withOwn}, true},
		{"test_process", []gocomms.Option{withOwn}, false},
	} {
		chosen := append([]gocomms.Option{gocomms.WithAlgorithm(gocomms.OpAllReduce, tc.name)}, tc.opts...)
		if !tc.runs {
			opts := append([]gocomms.Option{gocomms.WithRank(0), gocomms.WithSize(1)}, chosen...)
			c, err := gocomms.NewComm(context.Background(), gocomms.NativeBackend, gocomms.CPU, "algo", opts...)
			if err == nil {
				c.Finalize(context.Background())
			}
			if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), "is no all_reduce algorithm") {
				t.Errorf("%s with %d options: NewComm gave %v, want ErrInvalidArgument", tc.name, len(tc.opts), err)
			}
			continue
		}
		if got := framesOfAllReduce(t, "", chosen...); got != 6 {
			t.Errorf("%s with %d options: the all-reduce sent %d frames, want 6", tc.name, len(tc.opts), got)
		}
		if got := framesOfAllReduce(t, tc.name, tc.opts...); got != 6 {
			t.Errorf("%s named by the operation's hint with %d options: the all-reduce sent %d frames, want 6", tc.name, len(tc.opts), got)
		}
	}
}

// TestRegisterAlgorithmRefusesAWrongSchedule: a schedule that leaves out
// the last rank's input is refused with the checker's reason, and no
// communicator can name it.
func TestRegisterAlgorithmRefusesAWrongSchedule(t *testing.T) {
	forgetful := func(b *algorithms.Builder, s *algorithms.Spec) {
		if s.Rank == s.Size-1 && s.Size > 1 {
			return
		}
		reduceThenBroadcast(b, s)
	}
	err := gocomms.RegisterAlgorithm(algorithms.AllReduce, "test_forgetful", forgetful)
	if !errors.Is(err, algorithms.ErrBadSchedule) || !strings.Contains(err.Error(), "the checker refuses it") {
		t.Fatalf("RegisterAlgorithm of a schedule that forgets a rank: %v, want ErrBadSchedule with the checker's reason", err)
	}
	if slices.Contains(gocomms.Algorithms(algorithms.AllReduce), "test_forgetful") {
		t.Fatal("the refused schedule is listed")
	}
}
