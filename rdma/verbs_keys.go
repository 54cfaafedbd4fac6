package rdma

import (
	"context"
	"fmt"
)

// A RemoteBuffer names memory by the owner's registration key, which the
// owner's device knows nothing of: the requester asks the owner for the
// rkey, address and length of a key's registration over the side channel
// the first time it uses the key (resolve), and keeps the answer until
// the owner revokes it. Bounds are checked against it before anything is
// posted, so that a bad range fails the operation alone, as with the tcp
// provider, rather than the queue pair. The owner registers the Memory
// with its device when it is first asked (verbs_device.go).
//
// Deregistering memory whose rkey a peer holds revokes it: the owner
// sends a revoke, the peer drops the key, waits for its operations in
// flight on it, and says released; only then does the owner deregister
// the region and let Deregister return. The owner's writes on the side
// channel keep the order in which it decided them, so that a peer never
// learns an rkey after its revocation.
//
// The same goroutines that read the side channel take the peer's credits
// for notifying writes (credited), and lend gives the peer its own.

// remoteKey is what the peer said of one of its keys.
type remoteKey struct {
	rkey      uint32
	base, end uint64
	refs      int           // operations using it; under rmu
	drained   chan struct{} // closed when refs reach 0 after the revocation
}

// resolveWait is a question about a key on its way to the peer, and then
// its answer.
type resolveWait struct {
	done   chan struct{} // closed once status and r are set
	status uint8
	r      *remoteKey
}

// resolve returns the peer's registration of o's key, with a reference
// that unref drops once o is done, or the error that refuses o. It waits
// for the peer only the first time a key is used. An error here leaves
// the transport as it was, unless it is the transport's error.
func (e *verbsEndpoint) resolve(ctx context.Context, o *op) (*remoteKey, error) {
	key := o.remote.Key
	for {
		e.rmu.Lock()
		if r := e.rcache[key]; r != nil {
			r.refs++
			e.rmu.Unlock()
			return r, nil
		}
		w := e.resolves[key]
		ask := w == nil
		if ask {
			w = &resolveWait{done: make(chan struct{})}
			e.resolves[key] = w
		}
		e.rmu.Unlock()
		if ask {
			if err := e.out.send(ctl{kind: ctlResolve, key: key}); err != nil {
				return nil, e.ev.fail(fmt.Errorf("ask peer %s about key %#x: %w", e.out.c.RemoteAddr(), key, err))
			}
		}
		select {
		case <-w.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("%v, waiting for the peer's rkey of key %#x: %w", o, key, ctx.Err())
		case <-e.stopped:
			return nil, e.ev.fail(errClosed)
		}
		switch {
		case w.status == resolvedUnregistered:
			return nil, statusUnregistered.err(o)
		case w.status == resolvedRefused:
			return nil, fmt.Errorf("%v: the peer's device would not register its memory with key %#x: %w",
				o, key, ErrUnregistered)
		case w.r.end == w.r.base:
			// An empty registration: not cached, as nothing revokes it.
			w.r.refs++
			return w.r, nil
		}
		// Cached: loop to take a reference, unless it was revoked already.
	}
}

// unref drops a reference that resolve took.
func (e *verbsEndpoint) unref(r *remoteKey) {
	e.rmu.Lock()
	r.refs--
	if r.refs == 0 && r.drained != nil {
		close(r.drained)
		r.drained = nil
	}
	e.rmu.Unlock()
}

// converse reads the peer's answers and revocations on this endpoint's
// side channel until it fails, which breaks the transport.
func (e *verbsEndpoint) converse(cc *ctlConn) {
	defer e.wg.Done()
	for {
		m, err := cc.receive(true)
		if err == nil {
			switch m.kind {
			case ctlResolved:
				err = e.resolved(m)
			case ctlRevoke:
				err = e.revoked(cc, m.key)
			default:
				err = e.credited(int(m.n))
			}
		}
		if err != nil {
			e.ev.fail(fmt.Errorf("connection to peer %s: %w", cc.c.RemoteAddr(), err))
			return
		}
	}
}

// resolved takes the peer's answer about a key.
func (e *verbsEndpoint) resolved(m ctl) error {
	e.rmu.Lock()
	w := e.resolves[m.key]
	if w == nil {
		e.rmu.Unlock()
		return fmt.Errorf("an answer about key %#x, which was not asked about: %w", m.key, errProtocol)
	}
	delete(e.resolves, m.key)
	w.status = m.status
	if m.status == resolvedOK {
		w.r = &remoteKey{rkey: m.rkey, base: m.addr, end: m.addr + m.n}
		if m.n > 0 {
			e.rcache[m.key] = w.r
		}
	}
	e.rmu.Unlock()
	close(w.done)
	return nil
}

// revoked drops a key the peer is deregistering, and says released once
// no operation on it is in flight.
func (e *verbsEndpoint) revoked(cc *ctlConn, key uint64) error {
	e.rmu.Lock()
	r := e.rcache[key]
	if r == nil {
		e.rmu.Unlock()
		return fmt.Errorf("a revocation of key %#x, which this transport does not hold: %w", key, errProtocol)
	}
	delete(e.rcache, key)
	var drained chan struct{}
	if r.refs > 0 {
		drained = make(chan struct{})
		r.drained = drained
	}
	e.rmu.Unlock()
	// Released from a goroutine of its own, so that this one never waits
	// to write while the peer waits for it to read.
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if drained != nil {
			select {
			case <-drained:
			case <-e.stopped:
				return
			}
		}
		if err := cc.send(ctl{kind: ctlReleased, key: key}); err != nil {
			e.ev.fail(fmt.Errorf("connection to peer %s: %w", cc.c.RemoteAddr(), err))
		}
	}()
	return nil
}

// credited takes back n notifying writes' worth of the peer's receives.
func (e *verbsEndpoint) credited(n int) error {
	for range n {
		select {
		case e.notes <- struct{}{}:
		default:
			return fmt.Errorf("credit of %d receives, more than were taken: %w", n, errProtocol)
		}
	}
	return nil
}

// lend tells the peer, on its side channel, of the receives this
// endpoint has posted again, whenever the poller says there are some.
func (e *verbsEndpoint) lend(cc *ctlConn) {
	defer e.wg.Done()
	for {
		select {
		case <-e.owing:
		case <-e.stopped:
			return
		}
		if n := e.owed.Swap(0); n > 0 {
			if err := cc.send(ctl{kind: ctlCredit, n: uint64(n)}); err != nil {
				e.ev.fail(fmt.Errorf("serving peer %s: %w", cc.c.RemoteAddr(), err))
				return
			}
		}
	}
}

// serve answers the peer's questions about this process's keys, and takes
// its releases, until the side channel fails, which breaks the transport.
func (e *verbsEndpoint) serve(cc *ctlConn) {
	defer e.wg.Done()
	for {
		m, err := cc.receive(false)
		if err == nil {
			if m.kind == ctlResolve {
				err = e.answer(cc, m.key)
			} else {
				err = e.releasedBy(m.key)
			}
		}
		if err != nil {
			e.ev.fail(fmt.Errorf("serving peer %s: %w", cc.c.RemoteAddr(), err))
			return
		}
	}
}

// answer tells the peer the rkey, address and length of key's
// registration, registering it with the device if need be, or why not.
func (e *verbsEndpoint) answer(cc *ctlConn, key uint64) error {
	reply := ctl{kind: ctlResolved, key: key, status: resolvedUnregistered}
	var r *region
	if m := lookup(key); m != nil && len(m.buf) == 0 {
		reply.status, reply.addr = resolvedOK, m.base
	} else if m != nil {
		var err error
		r, err = e.dev.regionOf(m)
		if err != nil && err != ErrUnregistered {
			e.log.Warn("rdma: the device would not register memory a peer asked for", "key", fmt.Sprintf("%#x", key),
				"bytes", len(m.buf), "err", err)
			reply.status = resolvedRefused
		}
	}
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	// Exported and answered under wmu: a revocation decided after the
	// export goes out after the answer.
	if r != nil && e.dev.export(r, e) {
		reply.status, reply.rkey, reply.addr, reply.n = resolvedOK, r.mr.RKey(), r.base, r.end-r.base
	}
	return cc.sendLocked(reply)
}

// revoke tells the peer to drop key, and returns a channel closed once it
// has, or once the transport is down.
func (e *verbsEndpoint) revoke(key uint64) <-chan struct{} {
	c := make(chan struct{})
	e.mu.Lock()
	cc := e.in
	if e.isDown() || cc == nil {
		e.mu.Unlock()
		close(c)
		return c
	}
	e.revokes[key] = c
	e.mu.Unlock()
	if err := cc.send(ctl{kind: ctlRevoke, key: key}); err != nil {
		e.ev.fail(fmt.Errorf("serving peer %s: %w", cc.c.RemoteAddr(), err)) // closes c
	}
	return c
}

// releasedBy takes the peer's word that it no longer uses key.
func (e *verbsEndpoint) releasedBy(key uint64) error {
	e.mu.Lock()
	c := e.revokes[key]
	delete(e.revokes, key)
	e.mu.Unlock()
	if c == nil {
		return fmt.Errorf("a release of key %#x, which was not revoked: %w", key, errProtocol)
	}
	close(c)
	return nil
}
