package gocomms_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

type inner struct {
	Tag  string
	Vals []int32
}

// record is a value with the shapes the object collectives must carry:
// strings, slices, maps, nested structs. Empty slices and maps are nil, as
// gob decodes them.
type record struct {
	Rank  int
	Name  string
	Vals  []float64
	Attrs map[string]int
	Kids  []inner
	Blob  []byte
}

// recordOf is rank's value for round salt: rank 1's is empty, and with
// big, rank 0's holds more than a MiB.
func recordOf(rank, salt int, big bool) record {
	if rank == 1 {
		return record{}
	}
	r := record{Rank: rank, Name: strings.Repeat("r", rank) + fmt.Sprint(salt), Attrs: map[string]int{}}
	for i := range rank + 2 {
		r.Vals = append(r.Vals, float64(rank*salt)+float64(i)/4)
		r.Attrs[fmt.Sprint("k", i)] = rank * i
		r.Kids = append(r.Kids, inner{Tag: fmt.Sprint(i), Vals: []int32{int32(i), int32(-rank)}})
	}
	if big && rank == 0 {
		r.Blob = make([]byte, 1<<20+17)
		for i := range r.Blob {
			r.Blob[i] = byte(i * 7)
		}
	}
	return r
}

// guard runs fn on n ranks and fails t with their errors, or if they have
// not all returned within a minute: the object collectives must not hang.
func guard(t *testing.T, n int, fn func(ctx context.Context, c *gocomms.Comm) error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- gocomms.RunLocal(context.Background(), n, fn, gocomms.WithTimeout(30*time.Second))
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the ranks hang")
	}
}

// checkObjects runs every object collective once, with every root, and
// checks what each rank gets against the values the reference computes.
func checkObjects(ctx context.Context, c *gocomms.Comm, big bool, opts ...gocomms.ObjectOption) error {
	n, me := c.Size(), c.Rank()
	all, err := gocomms.AllGatherObject(ctx, c, recordOf(me, 1, big), opts...)
	if err != nil {
		return err
	}
	for q := range n {
		if !reflect.DeepEqual(all[q], recordOf(q, 1, big)) {
			return fmt.Errorf("rank %d: all_gather_object[%d] = %+v", me, q, all[q])
		}
	}
	for root := range n {
		got, err := gocomms.BroadcastObject(ctx, c, recordOf(me, 2, big), root, opts...)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, recordOf(root, 2, big)) {
			return fmt.Errorf("rank %d: broadcast_object from %d = %+v", me, root, got)
		}
		gathered, err := gocomms.GatherObject(ctx, c, recordOf(me, 3+root, big), root, opts...)
		if err != nil {
			return err
		}
		if me != root && gathered != nil {
			return fmt.Errorf("rank %d: gather_object to %d returned values off the root", me, root)
		}
		for q := range gathered {
			if !reflect.DeepEqual(gathered[q], recordOf(q, 3+root, big)) {
				return fmt.Errorf("rank %d: gather_object[%d] = %+v", me, q, gathered[q])
			}
		}
		var vs []record
		if me == root {
			for q := range n {
				vs = append(vs, recordOf((q+root)%n, 4, big))
			}
		}
		got, err = gocomms.ScatterObject(ctx, c, vs, root, opts...)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, recordOf((me+root)%n, 4, big)) {
			return fmt.Errorf("rank %d: scatter_object from %d = %+v", me, root, got)
		}
	}
	if n == 1 {
		return nil
	}
	// A ring: each rank sends to the next, eagerly, then receives from the
	// previous.
	next, prev := (me+1)%n, (me+n-1)%n
	if err := gocomms.SendObject(ctx, c, recordOf(me, 5, big), next, opts...); err != nil {
		return err
	}
	got, err := gocomms.RecvObject[record](ctx, c, prev, opts...)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, recordOf(prev, 5, big)) {
		return fmt.Errorf("rank %d: recv_object from %d = %+v", me, prev, got)
	}
	return nil
}

// TestObjects runs every object collective on 1 to 8 ranks.
func TestObjects(t *testing.T) {
	for n := 1; n <= 8; n++ {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			guard(t, n, func(ctx context.Context, c *gocomms.Comm) error { return checkObjects(ctx, c, false) })
		})
	}
}

// TestObjectsLarge carries a value of more than a MiB in each.
func TestObjectsLarge(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			guard(t, n, func(ctx context.Context, c *gocomms.Comm) error { return checkObjects(ctx, c, true) })
		})
	}
}

// TestObjectRingOfLargeValues: every rank sends a value of several MiB
// to the next before it receives from the previous. SendObject stays
// eager at any size, where a blocking send of a large tensor waits for
// its receive.
func TestObjectRingOfLargeValues(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			guard(t, n, func(ctx context.Context, c *gocomms.Comm) error {
				me := c.Rank()
				value := func(rank int) []byte {
					return bytes.Repeat([]byte{byte(rank + 1)}, 3<<20+rank)
				}
				if err := gocomms.SendObject(ctx, c, value(me), (me+1)%n); err != nil {
					return err
				}
				prev := (me + n - 1) % n
				got, err := gocomms.RecvObject[[]byte](ctx, c, prev)
				if err != nil {
					return err
				}
				if !bytes.Equal(got, value(prev)) {
					return fmt.Errorf("rank %d got %d bytes from rank %d, want %d", me, len(got), prev, len(value(prev)))
				}
				return nil
			})
		})
	}
}

// jsonCodec encodes with encoding/json: another Codec.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// TestObjectsJSON runs them with a JSON codec.
func TestObjectsJSON(t *testing.T) {
	guard(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		return checkObjects(ctx, c, false, gocomms.ObjectCodec(jsonCodec{}))
	})
}

// box holds a value gob can encode only if it is registered: a channel is
// neither registered nor encodable.
type box struct{ V any }

// badOn is a box gob can encode on every rank but bad.
func badOn(rank, bad int) box {
	if rank == bad {
		return box{V: make(chan int)}
	}
	return box{V: rank}
}

// wantEveryone fails unless err is an invalid argument whose text says
// what.
func wantEveryone(err error, what string) error {
	if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), what) {
		return fmt.Errorf("got %v, want an invalid argument saying %q", err, what)
	}
	return nil
}

// TestObjectEncodeFailure has one rank pass a value gob cannot encode:
// every rank's call fails, none hangs, and the communicator goes on.
func TestObjectEncodeFailure(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			bad := n - 1
			guard(t, n, func(ctx context.Context, c *gocomms.Comm) error {
				me := c.Rank()
				peer := fmt.Sprintf("ranks [%d] could not encode", bad)
				if me == bad {
					peer = "encoding a"
				}
				_, err := gocomms.AllGatherObject(ctx, c, badOn(me, bad))
				if err := wantEveryone(err, peer); err != nil {
					return fmt.Errorf("all_gather_object: %w", err)
				}
				_, err = gocomms.GatherObject(ctx, c, badOn(me, bad), 0)
				if err := wantEveryone(err, peer); err != nil {
					return fmt.Errorf("gather_object: %w", err)
				}
				root := fmt.Sprintf("root %d could not encode", bad)
				if me == bad {
					root = "encoding a"
				}
				_, err = gocomms.BroadcastObject(ctx, c, badOn(me, bad), bad)
				if err := wantEveryone(err, root); err != nil {
					return fmt.Errorf("broadcast_object: %w", err)
				}
				vs := make([]box, n)
				for q := range vs {
					vs[q] = badOn(q, n-1)
				}
				_, err = gocomms.ScatterObject(ctx, c, vs, bad)
				if err := wantEveryone(err, root); err != nil {
					return fmt.Errorf("scatter_object: %w", err)
				}
				if n > 1 {
					switch me {
					case bad:
						err = gocomms.SendObject(ctx, c, badOn(me, bad), 0)
						if err := wantEveryone(err, "encoding a"); err != nil {
							return fmt.Errorf("send_object: %w", err)
						}
					case 0:
						_, err = gocomms.RecvObject[box](ctx, c, bad)
						if err := wantEveryone(err, fmt.Sprintf("rank %d could not encode", bad)); err != nil {
							return fmt.Errorf("recv_object: %w", err)
						}
					}
				}
				// The communicator is whole: a good value goes through.
				all, err := gocomms.AllGatherObject(ctx, c, badOn(me, -1))
				if err != nil || len(all) != n || all[bad].V != bad {
					return fmt.Errorf("all_gather_object after the failures: %v, %v", all, err)
				}
				return nil
			})
		})
	}
}

// failingCodec is gob, but it cannot decode on rank bad.
type failingCodec struct{ rank, bad int }

func (f failingCodec) Marshal(v any) ([]byte, error) { return gocomms.GobCodec.Marshal(v) }

func (f failingCodec) Unmarshal(data []byte, v any) error {
	if f.rank == f.bad {
		return errors.New("no decoding here")
	}
	return gocomms.GobCodec.Unmarshal(data, v)
}

// TestObjectDecodeFailure has one rank fail to decode what it received:
// every rank's call fails, naming it.
func TestObjectDecodeFailure(t *testing.T) {
	const n, bad = 4, 2
	guard(t, n, func(ctx context.Context, c *gocomms.Comm) error {
		codec := gocomms.ObjectCodec(failingCodec{c.Rank(), bad})
		what := fmt.Sprintf("ranks [%d] could not decode", bad)
		if c.Rank() == bad {
			what = "no decoding here"
		}
		_, err := gocomms.AllGatherObject(ctx, c, 1, codec)
		if err := wantEveryone(err, what); err != nil {
			return fmt.Errorf("all_gather_object: %w", err)
		}
		_, err = gocomms.BroadcastObject(ctx, c, 1, 0, codec)
		if err := wantEveryone(err, what); err != nil {
			return fmt.Errorf("broadcast_object: %w", err)
		}
		_, err = gocomms.GatherObject(ctx, c, 1, bad, codec)
		if err := wantEveryone(err, what); err != nil {
			return fmt.Errorf("gather_object: %w", err)
		}
		_, err = gocomms.ScatterObject(ctx, c, []int{1, 2, 3, 4}, 0, codec)
		if err := wantEveryone(err, what); err != nil {
			return fmt.Errorf("scatter_object: %w", err)
		}
		return nil
	})
}

// TestObjectScatterWrongCount: a root with the wrong number of values
// fails every rank.
func TestObjectScatterWrongCount(t *testing.T) {
	guard(t, 3, func(ctx context.Context, c *gocomms.Comm) error {
		want := "root 1 could not encode"
		if c.Rank() == 1 {
			want = "2 values for 3 ranks"
		}
		_, err := gocomms.ScatterObject(ctx, c, []string{"a", "b"}, 1)
		return wantEveryone(err, want)
	})
}

// TestObjectHostileSizes: a peer that announces a negative or absurd size
// where SendObject and BroadcastObject send one fails the receiver's call
// with ErrInvalidArgument naming it, instead of a panic or an allocation
// of that size.
func TestObjectHostileSizes(t *testing.T) {
	for _, size := range []int64{-2, math.MinInt64, 1 << 50} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			local(t, 2, func(ctx context.Context, c *gocomms.Comm) error {
				if c.Rank() == 0 {
					if err := c.Send(ctx, gocomms.FromSlice([]int64{size}), 1); err != nil {
						return err
					}
					return c.Broadcast(ctx, gocomms.FromSlice([]int64{size}), 0)
				}
				_, err := gocomms.RecvObject[string](ctx, c, 0)
				if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprintf("rank 0 announced %d bytes", size)) {
					return fmt.Errorf("recv_object: got %v", err)
				}
				_, err = gocomms.BroadcastObject(ctx, c, "", 0)
				if !errors.Is(err, gocomms.ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprintf("rank 0 announced %d bytes", size)) {
					return fmt.Errorf("broadcast_object: got %v", err)
				}
				return nil
			})
		})
	}
}
