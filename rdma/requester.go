package rdma

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// The requester side of a tcpEndpoint has no goroutine of its own. The
// calling goroutine writes its request, holding sendSlot for the one
// vectored write of header and payload, then waits for its reply. Replies
// come back in request order, and one caller at a time reads them: the
// leader. It completes every op whose reply it reads, its own last, and
// then hands the lead to the oldest op still pending, whose caller wakes to
// read on; if none is pending, the lead lapses and the next caller takes
// it. So a lone caller reads its own reply with no goroutine switch, which
// is most of an atomic's round trip, and pipelined callers still have
// their replies read as they come.
//
// Invariant, under pmu: while pending is not empty, leading is true, and
// either a caller is reading or errLead is on its way to the oldest op's
// done channel. A caller takes the lead only if its op is still queued
// (its reply may have been read before the caller got to look) and no one
// leads; otherwise it waits on its done channel until a result other
// than errLead arrives.

// errLead, sent on an op's done channel, hands its caller the lead.
var errLead = errors.New("lead")

// await waits for o's result. If ctx ends first, abandon gives o up,
// which then fails.
func await(ctx context.Context, o *op, abandon func(context.Context, *op)) error {
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-o.done:
		return err
	default:
		abandon(ctx, o)
		return <-o.done
	}
}

func (e *tcpEndpoint) do(ctx context.Context, o *op) error {
	if err := e.send(ctx, o); err != nil {
		return err
	}
	e.pmu.Lock()
	// o may be answered already, by the leader, or failed: then its result
	// is on its way, and leading is no business of its caller's.
	lead := o.queued && !e.leading
	if lead {
		e.leading = true
	}
	e.pmu.Unlock()
	if !lead {
		if err := await(ctx, o, e.abandon); err != errLead {
			return result(ctx, o, err)
		}
	}
	return result(ctx, o, e.lead(ctx, o))
}

// result returns o's error, with the context's where o was abandoned.
func result(ctx context.Context, o *op, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, ErrBroken) && !errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("%w, with %v in flight: %w", ctx.Err(), o, err)
}

// abandon breaks the transport for o, whose context ended while it was on
// the wire: nothing says how far it got, and only a broken transport tells
// every later operation the truth and gets o's memory back (a read's
// payload could land in it later). With a queue pair it is the same.
func (e *tcpEndpoint) abandon(ctx context.Context, o *op) {
	e.ev.fail(fmt.Errorf("%v was abandoned on the wire: %v", o, context.Cause(ctx)))
}

// send writes o's request, unless ctx ends or the transport fails first.
// Once it returns nil, o is pending.
func (e *tcpEndpoint) send(ctx context.Context, o *op) error {
	if err := e.takeSlot(ctx, e.sendSlot, true); err == errClosed {
		return e.ev.fail(errClosed) // returns what ended the transport
	} else if err != nil {
		return fmt.Errorf("%v, waiting to be sent: %w", o, err)
	}
	defer func() { <-e.sendSlot }()

	e.pmu.Lock()
	if e.ended != nil {
		err := e.ended
		e.pmu.Unlock()
		return err
	}
	e.nextID++
	o.id = e.nextID
	e.pending.push(o) // before it is sent: the reply can come before the write returns
	o.queued = true
	e.pmu.Unlock()

	putRequest(&o.hdr, request{
		op: o.kind, notify: o.notify, id: o.id,
		addr: o.remote.Addr, n: o.remote.Len, key: o.remote.Key, a: o.a, b: o.b,
	})
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { e.abandon(ctx, o) })
	}
	raceRelease()
	var err error
	if len(o.src) == 0 {
		_, err = e.out.Write(o.hdr[:])
	} else {
		e.iov = [2][]byte{o.hdr[:], o.src}
		e.outv = e.iov[:]
		_, err = e.outv.WriteTo(e.out)
		e.iov = [2][]byte{}
	}
	if stop != nil {
		stop()
	}
	if err != nil {
		e.ev.fail(fmt.Errorf("send %v: %w", o, err))
	}
	return nil
}

// lead reads replies and completes their ops until o's reply has come,
// then hands the lead on. It returns o's result. If the stream fails, it
// fails every pending op, o included, with the transport's error.
func (e *tcpEndpoint) lead(ctx context.Context, o *op) error {
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { e.abandon(ctx, o) })
		defer stop()
	}
	for {
		x, err, readErr := e.readReply()
		if readErr != nil {
			return e.end(o, readErr)
		}
		if x != o {
			x.done <- err // the last touch of x
			continue
		}
		e.pmu.Lock()
		if e.pending.size > 0 {
			e.pending.peek().done <- errLead
		} else {
			e.leading = false
		}
		e.pmu.Unlock()
		return err
	}
}

// readReply reads the next reply and, for a read, its payload, and
// returns the op it answers and that op's result. readErr reports a stream
// that failed or broke the protocol.
func (e *tcpEndpoint) readReply() (o *op, result, readErr error) {
	hb := &e.replyHdr
	if _, err := io.ReadFull(e.replies, hb[:]); err != nil {
		if err == io.EOF {
			return nil, nil, errPeerClosed
		}
		return nil, nil, fmt.Errorf("receive a reply: %w", err)
	}
	raceAcquire()
	e.pmu.Lock()
	o = e.pending.peek()
	e.pmu.Unlock()
	if o == nil {
		return nil, nil, fmt.Errorf("a reply with no request outstanding: %w", errProtocol)
	}
	r, err := parseReply(hb, o.id, o)
	if err != nil {
		return nil, nil, err
	}
	if r.status == statusOK {
		switch o.kind {
		case opRead:
			if _, err := io.ReadFull(e.replies, o.dst); err != nil {
				return nil, nil, fmt.Errorf("receive the payload of %v: %w", o, unexpected(err))
			}
		case opFetchAdd, opCompareAndSwap:
			o.old = r.value
		}
	}
	e.pmu.Lock()
	e.pending.pop().queued = false
	e.pmu.Unlock()
	return o, r.status.err(o), nil
}

// end breaks the transport for a failed stream of replies, fails every
// pending op but the leader's own, o, with the transport's error, and
// returns that error for o.
func (e *tcpEndpoint) end(o *op, cause error) error {
	err := e.ev.fail(fmt.Errorf("connection to peer %s: %w", e.out.RemoteAddr(), cause))
	e.pmu.Lock()
	e.ended, e.leading = err, false
	var failed []*op
	for e.pending.size > 0 {
		x := e.pending.pop()
		x.queued = false
		failed = append(failed, x)
	}
	e.pmu.Unlock()
	for _, x := range failed {
		if x != o {
			x.done <- err
		}
	}
	return err
}
