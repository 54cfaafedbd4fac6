package gocomms

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/gocomms/gocomms/commerr"
)

// Agree is ULFM's MPI_Comm_agree: every rank that survives returns the
// AND of the flags of the ranks that called it and survived, and the ranks
// found failed, both the same on every survivor, even when ranks fail
// while it runs. It works on a communicator that a failure broke, which
// is what it is for; every rank must call it, in the same order as Shrink.
// It fails once ctx is done, or if the communicator was aborted.
func (c *Comm) Agree(ctx context.Context, flags uint64) (uint64, []int, error) {
	type decision struct {
		flags  uint64
		failed []int
	}
	d, ended, err := await(ctx, func(done func(decision, error)) {
		c.AgreeAsync(flags, func(flags uint64, failed []int, err error) { done(decision{flags, failed}, err) })
	}, nil)
	if !ended {
		return 0, nil, c.opError(&Op{Name: OpAgree}, context.Cause(ctx))
	}
	return d.flags, d.failed, err
}

// AgreeAsync is the async form of Agree, as ULFM's MPI_Comm_iagree: done
// is called once, with what Agree returns, from the goroutine that
// decides; it must not block.
func (c *Comm) AgreeAsync(flags uint64, done func(flags uint64, failed []int, err error)) {
	ft, err := c.faultTolerant(OpAgree)
	if err != nil {
		done(0, nil, err)
		return
	}
	ft.Agree(flags, func(flags uint64, failed []int, err error) {
		if err != nil {
			err = c.opError(&Op{Name: OpAgree}, err)
		}
		done(flags, failed, err)
	})
}

// faultTolerant returns the backend as a FaultTolerant one, for op, or
// an error saying it is not.
func (c *Comm) faultTolerant(op OpName) (FaultTolerant, error) {
	ft, ok := c.backend.(FaultTolerant)
	if c.cfg.Size == 0 {
		return nil, c.opError(&Op{Name: op}, fmt.Errorf("%w: call Reconfigure first", ErrNotInitialized))
	}
	if !ok {
		return nil, c.opError(&Op{Name: op}, commerr.Invalid("backend %q has no fault tolerance", c.backendName))
	}
	return ft, nil
}

// Revoke is ULFM's MPI_Comm_revoke: the running, queued and later
// operations of every rank fail with ErrRevoked naming this rank, so that
// ranks stuck in an operation a failure left hanging all leave it. Agree
// and Shrink still work, and are how the survivors go on; Split fails. The
// word spreads over the connections ranks have made to each other.
func (c *Comm) Revoke() error {
	ft, err := c.faultTolerant(OpRevoke)
	if err != nil {
		return err
	}
	ft.Revoke()
	return nil
}

// MonitoredBarrier is a barrier that names, when it times out, the ranks
// that failed to arrive, as Gloo's monitoredBarrier: rank 0 waits on every
// other rank at once (the linear barrier), and every rank's error comes
// from following that wait to the ranks that never called (up to 64 of
// them). A timeout of zero takes the communicator's.
func (c *Comm) MonitoredBarrier(ctx context.Context, timeout time.Duration, opts ...CallOption) error {
	opts = append([]CallOption{OpHints(map[string]string{HintAlgorithm: "linear"})}, opts...)
	if timeout > 0 {
		opts = append(opts, OpTimeout(timeout))
	}
	return c.Barrier(ctx, opts...)
}

// Shrink is ULFM's MPI_Comm_shrink: the ranks that survive agree on the
// ones that failed, and each gets a new communicator of the survivors,
// ranked densely in their old order, over the connections they share.
// The failed communicator stays broken; finalize it. A rank its peers
// found failed (it lost its links to them) gets an error naming the
// ranks that failed, itself included.
func (c *Comm) Shrink(ctx context.Context, opts ...Option) (*Comm, error) {
	// The survivors may still agree after the caller gave up: the
	// communicator they make then is nobody's, so it goes at once.
	s, ended, err := await(ctx, func(done func(*Comm, error)) { c.ShrinkAsync(ctx, done, opts...) }, func(s *Comm) {
		s.Abort(context.Cause(ctx))
		s.Finalize(context.WithoutCancel(ctx))
	})
	if !ended {
		return nil, c.opError(&Op{Name: OpShrink}, context.Cause(ctx))
	}
	return s, err
}

// ShrinkAsync is the async form of Shrink, as ULFM's MPIX_Comm_ishrink:
// done is called once, with what Shrink returns, from the goroutine that
// decides; it must not block. ctx bounds the new communicator's making.
func (c *Comm) ShrinkAsync(ctx context.Context, done func(*Comm, error), opts ...Option) {
	ft, err := c.faultTolerant(OpShrink)
	if err != nil {
		done(nil, err)
		return
	}
	ft.Agree(^uint64(0), func(_ uint64, failed []int, err error) {
		if err != nil {
			done(nil, c.opError(&Op{Name: OpShrink}, err))
			return
		}
		done(c.shrinkTo(ctx, failed, opts))
	})
}

// shrinkMembership is the membership of the shrink that leaves out
// failed.
func (c *Comm) shrinkMembership(suffix string, failed []int) *membership {
	m := &membership{}
	for r := range c.cfg.Size {
		if slices.Contains(failed, r) {
			continue
		}
		m.group = append(m.group, r)
		m.ranks = append(m.ranks, c.globalRank(r))
	}
	// Every survivor derives the same id from the membership they share
	// (names can differ after a Reconfigure: each keeps its own); no
	// exchange is possible over a broken communicator, and none is needed.
	h := fnv.New64a()
	h.Write([]byte(c.membership + suffix))
	id := binary.LittleEndian.AppendUint64(nil, h.Sum64())
	m.all = make([][]byte, c.cfg.Size)
	for _, g := range m.group {
		m.all[g] = id
	}
	return m
}

// shrinkTo makes the communicator of the ranks not in failed, which every
// survivor has agreed on.
func (c *Comm) shrinkTo(ctx context.Context, failed []int, opts []Option) (*Comm, error) {
	if slices.Contains(failed, c.cfg.Rank) {
		return nil, c.opError(&Op{Name: OpShrink}, fmt.Errorf("%w: the survivors found this rank failed too (failed ranks %v)", ErrPeerFailed, failed))
	}
	c.mu.Lock()
	suffix := ".shrink" + strconv.Itoa(c.shrinks)
	c.shrinks++
	c.mu.Unlock()
	name := c.cfg.Name + suffix
	key := membershipKey{name: c.membership + suffix, size: c.cfg.Size, failed: fmt.Sprint(failed)}
	if len(c.ranks) > 0 {
		key.parent = &c.ranks[0]
	}
	m := membershipOf(key, func() *membership { return c.shrinkMembership(suffix, failed) })
	me, _ := slices.BinarySearch(m.group, c.cfg.Rank)
	agreed := func(context.Context, []byte) ([][]byte, error) { return m.all, nil }
	s, err := c.splitGroupAt(ctx, OpShrink, name, m.group, m.ranks, me, agreed, opts)
	if err != nil {
		return nil, err
	}
	s.membership = c.membership + suffix
	return s, nil
}
