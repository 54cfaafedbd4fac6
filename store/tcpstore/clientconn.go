package tcpstore

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"
)

// clientConn is one connection of a Client, used by one call at a time.
// Requests on it are strictly request and reply, in order.
type clientConn struct {
	nc      net.Conn
	codes   numbering
	dec     decoder
	enc     encoder
	timeout time.Duration // bounds each exchange that is not a wait

	// waiting is set while a WAIT's reply is awaited, so that a call
	// interrupted there knows the connection can be saved with CANCEL_WAIT.
	waiting bool
}

func newClientConn(nc net.Conn, codes numbering, timeout time.Duration) *clientConn {
	return &clientConn{
		nc:      nc,
		codes:   codes,
		dec:     decoder{r: bufio.NewReader(nc), limits: Limits{}.withDefaults(), budget: noBudget},
		enc:     encoder{w: bufio.NewWriter(nc)},
		timeout: timeout,
	}
}

// aLongTimeAgo is a deadline that makes blocked I/O fail at once.
var aLongTimeAgo = time.Unix(1, 0)

// watch makes cc's blocked I/O fail once ctx ends. The returned stop undoes
// that and reports whether it had happened; the deadline is then in the
// past until the next arm.
func (cc *clientConn) watch(ctx context.Context) (stop func() (fired bool)) {
	if ctx.Done() == nil {
		return func() bool { return false } // ctx never ends
	}
	fired := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		cc.nc.SetDeadline(aLongTimeAgo)
		close(fired)
	})
	return func() bool {
		if stopAfter() {
			return false
		}
		<-fired
		return true
	}
}

// arm bounds the next exchange by the timeout.
func (cc *clientConn) arm() { cc.nc.SetDeadline(time.Now().Add(cc.timeout)) }

// query starts a request of kind o.
func (cc *clientConn) query(o op) error {
	b, ok := cc.codes.code(o)
	if !ok {
		return fmt.Errorf("%v is not in this dialect", o)
	}
	cc.enc.u8(b)
	return nil
}

// send flushes the request encoded so far.
func (cc *clientConn) send() error { return cc.enc.w.Flush() }

// wait sends WAIT for keys and reads its STOP_WAITING, however long that
// takes; the call's context is what bounds it.
func (cc *clientConn) wait(keys []string) error {
	if err := cc.query(opWait); err != nil {
		return err
	}
	cc.enc.keys(keys)
	if err := cc.send(); err != nil {
		return err
	}
	cc.nc.SetReadDeadline(time.Time{})
	cc.waiting = true
	b, err := cc.dec.u8()
	if err != nil {
		return err
	}
	cc.waiting = false
	cc.arm()
	return expectByte("WAIT", b, stopWaiting)
}

// cancelGrace bounds saving a connection with CANCEL_WAIT, which runs
// after the caller's context has ended; past it the connection is dropped,
// which the server takes as cancelling too.
const cancelGrace = time.Second

// cancelWait saves a connection whose WAIT was interrupted: it sends
// CANCEL_WAIT and reads its WAIT_CANCELED, after the STOP_WAITING of a key
// that won the race, if one comes first.
func (cc *clientConn) cancelWait() error {
	cc.waiting = false
	cc.nc.SetDeadline(time.Now().Add(min(cc.timeout, cancelGrace)))
	if err := cc.query(opCancelWait); err != nil {
		return err
	}
	if err := cc.send(); err != nil {
		return err
	}
	b, err := cc.dec.u8()
	if err == nil && b == stopWaiting {
		b, err = cc.dec.u8()
	}
	if err != nil {
		return err
	}
	return expectByte("CANCEL_WAIT", b, waitCanceled)
}

// expectByte checks a one-byte reply.
func expectByte(what string, got, want byte) error {
	if got != want {
		return fmt.Errorf("%s replied %#x, want %#x", what, got, want)
	}
	return nil
}
