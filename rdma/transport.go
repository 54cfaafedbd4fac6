package rdma

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gocomms/gocomms/internal/names"
)

// maxTransfer is the longest Write or Read, in bytes (1 TiB): far above
// any buffer a process registers, and a bound that a decoder can check.
const maxTransfer = 1 << 40

// opKind says what an op does; the values are the wire's (see wire.go).
type opKind uint8

const (
	opWrite          opKind = 1
	opRead           opKind = 2
	opFetchAdd       opKind = 3
	opCompareAndSwap opKind = 4
)

var opKindNames = [...]string{opWrite: "write", opRead: "read", opFetchAdd: "fetch-add", opCompareAndSwap: "compare-and-swap"}

func (k opKind) String() string { return names.Numbered(k, "op ", opKindNames[:]) }

// op is one operation on its way through an endpoint. Ops are pooled per
// Transport: an op goes back to the pool only once its done channel has
// delivered, when no endpoint holds it any more.
type op struct {
	kind   opKind
	remote RemoteBuffer
	notify bool    // write: count at the peer's WaitForWrite
	mem    *Memory // write and read: the registration src or dst is a view of
	src    []byte  // write: the payload
	dst    []byte  // read: where the payload lands
	a, b   uint64  // fetch-add: a is the addend; compare-and-swap: a compare, b swap
	old    uint64  // atomics: the word's value before

	done chan error // capacity 1: the result, sent once

	// The software provider's: request id, encoded header, and whether it
	// awaits its reply (under the endpoint's pmu).
	id     uint64
	hdr    [reqHeaderLen]byte
	queued bool
}

func (o *op) String() string {
	switch o.kind {
	case opWrite:
		return fmt.Sprintf("write of %d bytes to %v", len(o.src), o.remote)
	case opRead:
		return fmt.Sprintf("read of %d bytes from %v", len(o.dst), o.remote)
	}
	return fmt.Sprintf("%v on %v", o.kind, o.remote)
}

// Transport is one end of a point-to-point connection that reads and
// writes a peer's registered memory: both ends Bind, exchange Addresses
// out of band, and Connect to each other. A transport that connected
// issues operations to its peer; a transport that is bound serves the
// operations of the peer that connected to it. The two directions are
// independent.
//
// Its methods are safe for concurrent use. Operations that block take a
// context and honour its deadline and cancellation; see the package
// documentation for what a context that ends does to the transport.
type Transport struct {
	cfg config
	ep  endpoint
	ops sync.Pool // of *op

	mu         sync.Mutex
	err        error                  // what every call fails with: broken, or errClosed once closed; nil while usable
	dead       chan struct{}          // closed when err is first set
	addr       Address                // once bound
	peer       atomic.Pointer[string] // the peer's host:port, once connected
	connecting bool
	notes      uint64          // notifying writes landed and not waited for yet
	waiters    []chan struct{} // WaitForWrite calls waiting for a notification, oldest first
}

// New returns a transport, neither bound nor connected.
func New(opts ...Option) (*Transport, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := Supported(cfg.provider); err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg, dead: make(chan struct{})}
	t.ops.New = func() any { return &op{done: make(chan error, 1)} }
	ep, err := providers[cfg.provider].newEndpoint(&t.cfg, t)
	if err != nil {
		return nil, err
	}
	t.ep = ep
	return t, nil
}

// Bind makes the transport reachable and returns its Address, for the peer
// to Connect to. Later calls return the same Address. Until a peer
// connects, the transport serves nobody; the first peer that presents this
// Address is served, and no other after it.
func (t *Transport) Bind() (Address, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return nil, t.opErr("bind", t.err)
	}
	if t.addr != nil {
		return t.addr, nil
	}
	part, err := t.ep.bind()
	if err != nil {
		return nil, t.opErr("bind", err)
	}
	t.addr = makeAddress(t.cfg.provider, part)
	t.cfg.log.Info("rdma: bound", "addr", t.addr.String())
	return t.addr, nil
}

// Connect connects to the peer that bound peer, so that this transport's
// operations reach the peer's memory. It fails at once, leaving the
// transport as it was, if nothing listens there or the address is stale
// (its transport was closed, and perhaps another bound the same port); a
// caller that exchanged addresses before the peer bound may retry.
// Connecting twice is an error.
func (t *Transport) Connect(ctx context.Context, peer Address) error {
	name, part, err := peer.parse()
	if err != nil {
		return t.opErr("connect", err)
	}
	if name != t.cfg.provider {
		return t.opErr("connect", fmt.Errorf("peer address %v is for provider %q, this transport's is %q: %w",
			peer, name, t.cfg.provider, ErrUnsupported))
	}
	t.mu.Lock()
	switch {
	case t.err != nil:
		err = t.err
	case t.peer.Load() != nil || t.connecting:
		err = fmt.Errorf("already connected or connecting to a peer, now asked for %v: %w", peer, ErrInvalid)
	}
	if err != nil {
		t.mu.Unlock()
		return t.opErr("connect", err)
	}
	t.connecting = true
	t.mu.Unlock()

	name, err = t.ep.connect(ctx, part)

	t.mu.Lock()
	defer t.mu.Unlock()
	t.connecting = false
	if err != nil {
		return &OpError{Op: "connect", Peer: peer.String(), Err: err}
	}
	if t.err != nil { // closed or broken while connecting; the endpoint is shut down
		return &OpError{Op: "connect", Peer: name, Err: t.err}
	}
	t.peer.Store(&name)
	t.cfg.log.Info("rdma: connected", "peer", name)
	return nil
}

// Connected reports whether the transport has connected to its peer and
// is neither broken nor closed.
func (t *Transport) Connected() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.peer.Load() != nil && t.err == nil
}

// Write copies local into the peer's memory at remote, which must have
// local's length; a zero-length write is allowed, and with notify is a
// bare notification. Write returns once the payload is in the peer's
// memory (remote completion). With notify, the write counts towards the
// peer's WaitForWrite once its payload has landed.
func (t *Transport) Write(ctx context.Context, local View, remote RemoteBuffer, notify bool) error {
	src, err := local.bytes()
	if err == nil {
		err = checkRange(remote, len(src))
	}
	if err != nil {
		return t.opErr("write", err)
	}
	o := t.ops.Get().(*op)
	o.kind, o.remote, o.mem, o.src, o.notify = opWrite, remote, local.m, src, notify
	err = t.do(ctx, o)
	t.putOp(o)
	return err
}

// Read copies the peer's memory at remote, which must have local's length,
// into local. Write and Read may not share local memory while both are in
// flight: that is the caller's race, as it would be with verbs.
func (t *Transport) Read(ctx context.Context, local MutableView, remote RemoteBuffer) error {
	dst, err := local.bytes()
	if err == nil {
		err = checkRange(remote, len(dst))
	}
	if err != nil {
		return t.opErr("read", err)
	}
	o := t.ops.Get().(*op)
	o.kind, o.remote, o.mem, o.dst = opRead, remote, local.m, dst
	err = t.do(ctx, o)
	t.putOp(o)
	return err
}

// FetchAdd adds add to the 8-byte word at remote, which must be 8 bytes
// long and 8-byte aligned, and returns the word's value before. The word
// is in its owner's native byte order, as a Go uint64 there reads it.
func (t *Transport) FetchAdd(ctx context.Context, remote RemoteBuffer, add uint64) (old uint64, err error) {
	if err := checkWord(remote); err != nil {
		return 0, t.opErr("fetch-add", err)
	}
	o := t.ops.Get().(*op)
	o.kind, o.remote, o.a = opFetchAdd, remote, add
	err = t.do(ctx, o)
	old = o.old
	t.putOp(o)
	return old, err
}

// CompareAndSwap sets the 8-byte word at remote to swap if it holds
// compare, and returns the value it held before either way: the swap
// happened if and only if old == compare. remote must be 8 bytes long and
// 8-byte aligned.
func (t *Transport) CompareAndSwap(ctx context.Context, remote RemoteBuffer, compare, swap uint64) (old uint64, err error) {
	if err := checkWord(remote); err != nil {
		return 0, t.opErr("compare-and-swap", err)
	}
	o := t.ops.Get().(*op)
	o.kind, o.remote, o.a, o.b = opCompareAndSwap, remote, compare, swap
	err = t.do(ctx, o)
	old = o.old
	t.putOp(o)
	return old, err
}

// WaitForWrite returns once a notifying Write from the peer has landed in
// this process's memory. Notifications count: N notifying writes satisfy N
// waits, whether each wait starts before or after its write. A wait whose
// context ends leaves the transport usable, and consumes no notification.
func (t *Transport) WaitForWrite(ctx context.Context) error {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return t.opErr("wait-for-write", t.err)
	}
	if t.notes > 0 {
		t.notes--
		t.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		t.mu.Unlock()
		return t.opErr("wait-for-write", err)
	}
	w := make(chan struct{}, 1)
	t.waiters = append(t.waiters, w)
	t.mu.Unlock()

	select {
	case <-w:
		return nil
	case <-ctx.Done():
	case <-t.dead:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.waiters, w); i >= 0 {
		t.waiters = slices.Delete(t.waiters, i, i+1)
	} else {
		return nil // notified as the wait ended: the notification is this wait's
	}
	if t.err != nil {
		return t.opErr("wait-for-write", t.err)
	}
	return t.opErr("wait-for-write", ctx.Err())
}

// Close shuts the transport down: the listener, the connections, and the
// calls in progress, which fail with ErrClosed. It returns once no
// goroutine of the transport touches registered memory any more. Later
// calls fail with ErrClosed; Close itself may be called again and returns
// nil.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.err == errClosed {
		t.mu.Unlock()
		return nil
	}
	if t.err == nil {
		close(t.dead)
	}
	t.err = errClosed
	t.mu.Unlock()
	t.ep.shutdown()
	t.ep.wait()
	t.cfg.log.Info("rdma: closed", "peer", t.peerName())
	return nil
}

// errClosed is what every call fails with once Close was called.
var errClosed = fmt.Errorf("transport %w", ErrClosed)

// do runs o, once its arguments are checked, and returns its result.
func (t *Transport) do(ctx context.Context, o *op) error {
	t.mu.Lock()
	err := t.err
	if err == nil && t.peer.Load() == nil {
		err = ErrNotConnected
	}
	t.mu.Unlock()
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = t.ep.do(ctx, o)
	}
	return t.opErr(o.kind.String(), err)
}

func (t *Transport) putOp(o *op) {
	*o = op{done: o.done}
	t.ops.Put(o)
}

// notified implements events.
func (t *Transport) notified() {
	t.mu.Lock()
	if len(t.waiters) > 0 {
		w := t.waiters[0]
		t.waiters = slices.Delete(t.waiters, 0, 1)
		w <- struct{}{}
	} else {
		t.notes++
	}
	t.mu.Unlock()
}

// fail implements events. The cause is kept as text where it holds a
// context's error, so that later calls, which have contexts of their own,
// do not report a deadline they did not have.
func (t *Transport) fail(cause error) error {
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return err
	}
	if errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		cause = errors.New(cause.Error())
	}
	t.err = fmt.Errorf("%w: %w", ErrBroken, cause)
	err := t.err
	close(t.dead)
	t.mu.Unlock()
	t.cfg.log.Warn("rdma: transport broken", "peer", t.peerName(), "cause", cause)
	t.ep.shutdown()
	return err
}

func (t *Transport) opErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: name, Peer: t.peerName(), Err: err}
}

// peerName returns the peer's host:port, or "" before Connect.
func (t *Transport) peerName() string {
	if p := t.peer.Load(); p != nil {
		return *p
	}
	return ""
}

// checkRange checks that remote has length n and fits a transfer.
func checkRange(remote RemoteBuffer, n int) error {
	switch {
	case remote.Len != uint64(n):
		return fmt.Errorf("local view of %d bytes, %v: lengths differ: %w", n, remote, ErrBounds)
	case remote.Len > maxTransfer:
		return fmt.Errorf("%v: longer than the limit of %d bytes: %w", remote, uint64(maxTransfer), ErrBounds)
	case remote.Len > math.MaxUint64-remote.Addr:
		return fmt.Errorf("%v: wraps around the address space: %w", remote, ErrBounds)
	}
	return nil
}

// checkWord checks that remote is one aligned 8-byte word.
func checkWord(remote RemoteBuffer) error {
	if remote.Len != 8 || remote.Addr%8 != 0 {
		return fmt.Errorf("%v: atomics need an 8-byte aligned word of 8 bytes: %w", remote, ErrBounds)
	}
	return nil
}
