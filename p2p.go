package gocomms

import (
	"context"
	"fmt"

	"github.com/gocomms/gocomms/commerr"
)

// Send sends t to rank dst, which receives it with Recv. On the native
// backend a send of up to 1 MiB (engine.EagerMax) is eager: it completes
// once its data has left this rank, whether or not dst has posted the
// receive. A larger one waits at this rank until dst has posted it (a
// rendezvous), so that dst never holds a large message it did not ask
// for, as NCCL's and MPI's large sends wait: ranks that all send large
// messages before they receive must use SendAsync or a Batch.
func (c *Comm) Send(ctx context.Context, t *Tensor, dst int, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.p2p(&r.op, OpSend, true, t, dst, opts), opts)
}

// SendAsync is the async form of Send.
func (c *Comm) SendAsync(t *Tensor, dst int, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.p2p(&r.op, OpSend, true, t, dst, opts), opts)
}

// Recv receives into t what rank src sent with Send.
func (c *Comm) Recv(ctx context.Context, t *Tensor, src int, opts ...CallOption) error {
	r := c.record()
	return c.runRecord(ctx, r, c.p2p(&r.op, OpRecv, false, t, src, opts), opts)
}

// RecvAsync is the async form of Recv.
func (c *Comm) RecvAsync(t *Tensor, src int, opts ...CallOption) *Work {
	r := c.record()
	return c.startRecord(r, c.p2p(&r.op, OpRecv, false, t, src, opts), opts)
}

func (c *Comm) p2p(s *roomOp, name OpName, send bool, t *Tensor, peer int, opts []CallOption) error {
	s.Op = Op{Name: name, Root: -1}
	m, err := c.message(send, t, peer, opts)
	if err != nil {
		return err
	}
	s.msg[0] = m
	s.DType, s.P2P = t.DType(), s.msg[:]
	return nil
}

func (c *Comm) message(send bool, t *Tensor, peer int, opts []CallOption) (P2P, error) {
	cc := callOf(opts)
	what := "source"
	if send {
		what = "destination"
	}
	if err := c.checkRank(what, peer); err != nil {
		return P2P{}, err
	}
	if peer == c.cfg.Rank {
		return P2P{}, commerr.Invalid("%s %d is this rank", what, peer)
	}
	if err := c.checkTensor("tensor", t); err != nil {
		return P2P{}, err
	}
	if cc.tag < 0 {
		return P2P{}, commerr.Invalid("negative tag %d", cc.tag)
	}
	return P2P{Send: send, Peer: peer, Tag: cc.tag, Tensor: t}, nil
}

// Batch collects sends and receives that are issued together and run
// concurrently: the only way point-to-point operations overlap, as
// torchcomms' batch_op_issue.
type Batch struct {
	c   *Comm
	ops []P2P
	err error
}

// NewBatch returns an empty batch.
func (c *Comm) NewBatch() *Batch { return &Batch{c: c} }

// Send adds a send of t to dst (Tag sets its tag).
func (b *Batch) Send(t *Tensor, dst int, opts ...CallOption) *Batch { return b.add(true, t, dst, opts) }

// Recv adds a receive into t from src (Tag sets its tag).
func (b *Batch) Recv(t *Tensor, src int, opts ...CallOption) *Batch {
	return b.add(false, t, src, opts)
}

func (b *Batch) add(send bool, t *Tensor, peer int, opts []CallOption) *Batch {
	m, err := b.c.message(send, t, peer, opts)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("batch op %d: %w", len(b.ops), err)
	}
	b.ops = append(b.ops, m)
	return b
}

// Issue runs the batch and waits for it.
func (b *Batch) Issue(ctx context.Context, opts ...CallOption) error {
	r := b.c.record()
	return b.c.runRecord(ctx, r, b.op(&r.op), opts)
}

// IssueAsync runs the batch and returns its Work.
func (b *Batch) IssueAsync(opts ...CallOption) *Work {
	r := b.c.record()
	return b.c.startRecord(r, b.op(&r.op), opts)
}

func (b *Batch) op(s *roomOp) error {
	s.Op = Op{Name: OpBatch, Root: -1, P2P: b.ops}
	if b.err != nil {
		return b.err
	}
	if len(b.ops) == 0 {
		return commerr.Invalid("empty batch")
	}
	s.DType = b.ops[0].Tensor.DType()
	return nil
}
