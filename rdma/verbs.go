package rdma

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/gocomms/gocomms/rdma/verbs"
)

// verbsProvider carries operations on an RDMA device, through libibverbs
// (package verbs): each transport owns a reliable-connected queue pair,
// writes, reads and atomics are RDMA work requests that the peer's NIC
// serves without its CPU, and a notifying write is a write with
// immediate data that consumes a receive the peer keeps posted. A TCP
// side channel per direction, opened by Bind and Connect as the tcp
// provider opens its connections, pairs the queue pairs and maps
// registration keys to the device's rkeys (verbs_wire.go); data never
// crosses it.
type verbsProvider struct{}

func (verbsProvider) available() error {
	lib, err := verbs.Open()
	if err == nil {
		_, err = lib.Devices()
	}
	if err != nil {
		return fmt.Errorf("rdma: provider \"verbs\": %w: %w", ErrUnsupported, err)
	}
	return nil
}

// The verbs provider's part of an Address has the tcp provider's layout:
// the nonce and host:port of its side channel's listener.
func (verbsProvider) describe(part []byte) string { return tcpProvider{}.describe(part) }

// Sizes of a transport's queues. Every send request is signaled and holds
// one slot until its completion: at most verbsSendDepth are in flight.
// Each notifying write of the peer consumes a receive: verbsRecvDepth
// are posted, each posted again as its completion is polled, and the
// peer has as many credits, one taken by each notifying write and given
// back over the side channel once its receive is posted again, so that
// no write finds none (a device would retry it, after min_rnr_timer,
// without limit). The completion queue holds both kinds of completion.
const (
	verbsSendDepth = 128
	verbsRecvDepth = 128
	// verbsMaxChunk bounds one work request's length (an SGE's is 32 bits,
	// and ports take at most 2 GiB in a message): longer transfers are
	// posted as several, back to back.
	verbsMaxChunk = 1 << 30
	// recvTag marks the work request ids of receives.
	recvTag = 1 << 63
)

// verbsChunk, when not 0, replaces verbsMaxChunk: tests make transfers of
// many chunks with it.
var verbsChunk int

func (verbsProvider) newEndpoint(cfg *config, ev events) (endpoint, error) {
	dev, err := acquireVerbsDevice(cfg.verbsDevice)
	if err != nil {
		return nil, verbsUnusable(err)
	}
	e := &verbsEndpoint{
		ev:       ev,
		dev:      dev,
		sendLock: make(chan struct{}, 1),
		credits:  make(chan struct{}, verbsSendDepth),
		kick:     make(chan struct{}, 1),
		notes:    make(chan struct{}, verbsRecvDepth),
		owing:    make(chan struct{}, 1),
		revokes:  make(map[uint64]chan struct{}),
		rcache:   make(map[uint64]*remoteKey),
		resolves: make(map[uint64]*resolveWait),
	}
	e.sideChannel.init(cfg)
	if err := e.setup(); err != nil {
		e.release()
		return nil, verbsUnusable(err)
	}
	for range verbsRecvDepth {
		e.notes <- struct{}{}
	}
	for i := range verbsSendDepth {
		e.credits <- struct{}{}
		e.freeSlots = append(e.freeSlots, int32(i))
		e.freeFlights = append(e.freeFlights, int32(i))
	}
	return e, nil
}

// verbsUnusable says why no endpoint could be made: with ErrUnsupported
// where verbs cannot be used here at all (no device, a port that is not
// active, a RoCE port without an address).
func verbsUnusable(err error) error {
	if errors.Is(err, verbs.ErrUnavailable) {
		return fmt.Errorf("rdma: provider \"verbs\": %w: %w", ErrUnsupported, err)
	}
	return fmt.Errorf("rdma: provider \"verbs\": %w", err)
}

// setup makes the endpoint's queues and its two small regions, and
// describes its queue pair.
func (e *verbsEndpoint) setup() error {
	d, port := e.dev, e.cfg.verbsPort
	gid := e.cfg.verbsGIDIndex
	pa, err := d.ctx.QueryPort(port)
	if err != nil {
		return err
	}
	if gid < 0 && pa.LinkLayer == verbs.LinkEthernet {
		for i := range pa.GIDTableLen {
			if g, err := d.ctx.QueryGID(port, i); err == nil && !g.IsZero() {
				gid = i
				break
			}
		}
		if gid < 0 {
			return fmt.Errorf("device %s port %d is RoCE and has no GID: give its network device an address: %w",
				d.name, port, verbs.ErrUnavailable)
		}
	}
	e.chunk = verbsMaxChunk
	if pa.MaxMsgSize > 0 && int(pa.MaxMsgSize) < e.chunk {
		e.chunk = int(pa.MaxMsgSize)
	}
	if verbsChunk > 0 {
		e.chunk = verbsChunk
	}
	if e.cq, err = d.ctx.CreateCQ(verbsSendDepth + verbsRecvDepth); err != nil {
		return err
	}
	caps := verbs.QPCaps{MaxSendWR: verbsSendDepth, MaxRecvWR: verbsRecvDepth}
	if e.qp, err = d.ctx.CreateQP(d.pd, e.cq, e.cq, caps); err != nil {
		return err
	}
	if e.local, err = e.qp.Endpoint(port, gid, rand.Uint32N(1<<24)); err != nil {
		return err
	}
	// Atomics' old values land in a word per send slot; the peer's
	// zero-length notifications name the notify word, the only memory of
	// the endpoint's own that the peer may write.
	e.scratch = make([]uint64, verbsSendDepth)
	if e.scratchMR, err = d.pd.RegMR(wordBytes(e.scratch), verbs.AccessLocalWrite); err != nil {
		return err
	}
	e.notifyWord = make([]uint64, 1)
	e.notifyMR, err = d.pd.RegMR(wordBytes(e.notifyWord), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	return err
}

func wordBytes(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}

// verbsEndpoint is a Transport over an RDMA device. Its queue pair is
// connected to the peer's: both directions of operations travel on the
// pair, each side's requests served by the other's NIC. Its side channel
// is two TCP connections, as the tcp provider's are: the one it dials
// (out) carries its questions about the peer's keys, and the one its
// listener accepts (in) the peer's questions about its own.
//
// Operations: verbs_ops.go. Keys, rkeys, credits and the goroutines that
// read the side channel: verbs_keys.go. The registrations: verbs_device.go.
type verbsEndpoint struct {
	sideChannel // its mu guards what follows pairMu too
	ev          events

	dev        *verbsDevice
	cq         *verbs.CQ
	qp         *verbs.QP
	local      verbs.Endpoint // the queue pair's, for the peer
	chunk      int            // the longest work request
	scratch    []uint64       // atomics' results, one word per send slot
	scratchMR  *verbs.MR
	notifyWord []uint64
	notifyMR   *verbs.MR
	released   sync.Once

	pairMu sync.Mutex // held while the queue pair is being connected

	in         *ctlConn       // the peer's side channel, once accepted
	out        *ctlConn       // this endpoint's, once connected
	paired     verbs.Endpoint // the peer's queue pair, once this one is connected to it
	peerNotify notifyTarget   // the peer's notify word, once connected
	revokes    map[uint64]chan struct{}

	// Operations in flight (verbs_ops.go), under mu.
	slots       [verbsSendDepth]verbsSlot
	flights     [verbsSendDepth]verbsFlight
	freeSlots   []int32
	freeFlights []int32
	inflight    atomic.Int64  // send requests posted and not completed
	sendLock    chan struct{} // held while an op's requests are posted
	credits     chan struct{} // a free send slot each
	kick        chan struct{} // wakes an idle poller
	hold        atomic.Pointer[pollHold]

	// Notifying writes: one of notes is taken by each that goes out, and
	// the peer gives them back as it posts its receives again (ctlCredit);
	// owed counts the receives this endpoint has posted again and not yet
	// told the peer of, and owing wakes lend to tell it.
	notes chan struct{}
	owed  atomic.Int64
	owing chan struct{}

	// The peer's keys (verbs_keys.go), under rmu.
	rmu      sync.Mutex
	rcache   map[uint64]*remoteKey
	resolves map[uint64]*resolveWait
}

// ctlConn is a side-channel connection: messages are written whole under
// wmu, and read by one goroutine.
type ctlConn struct {
	c   net.Conn
	br  *bufio.Reader
	wmu sync.Mutex
	wb  [ctlLen]byte
	rb  [ctlLen]byte
}

func newCtlConn(c net.Conn) *ctlConn {
	return &ctlConn{c: c, br: bufio.NewReaderSize(c, 4096)}
}

func (cc *ctlConn) send(m ctl) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	return cc.sendLocked(m)
}

// sendLocked writes m; the caller holds wmu.
func (cc *ctlConn) sendLocked(m ctl) error {
	putCtl(&cc.wb, m)
	_, err := cc.c.Write(cc.wb[:])
	return err
}

// receive reads the next message, which travels to the dialer or not. A
// peer that closes with messages of this end's still unread (credits,
// answers: they come unasked) resets the connection rather than ending
// it: that too is the peer closing.
func (cc *ctlConn) receive(toDialer bool) (ctl, error) {
	if n, err := io.ReadFull(cc.br, cc.rb[:]); err != nil {
		switch {
		case err == io.EOF:
			return ctl{}, errPeerClosed
		case n == 0 && errors.Is(err, syscall.ECONNRESET):
			return ctl{}, fmt.Errorf("%w: %w", errPeerClosed, err)
		}
		return ctl{}, unexpected(err)
	}
	return parseCtl(&cc.rb, toDialer)
}

func (e *verbsEndpoint) bind() ([]byte, error) { return listen[verbsHello](&e.sideChannel, e) }

// errPairedElsewhere reports a queue pair connected to another peer's.
var errPairedElsewhere = errors.New("this transport's queue pair is connected to another peer's")

// The verbs provider's side of the listener's handshake (acceptor): the
// hello carries the dialer's queue pair, which this one connects to
// before it answers with its own.

func (e *verbsEndpoint) readHello(c net.Conn) (hello, verbsHello, error) {
	var hb [verbsHelloLen]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		return hello{}, verbsHello{}, err
	}
	h, err := parseVerbsHello(&hb)
	return h.hello, h, err
}

func (e *verbsEndpoint) speaks() uint16 { return verbsProtocol.version }

func (e *verbsEndpoint) busy() bool { return e.in != nil }

func (e *verbsEndpoint) otherPeer(h verbsHello) bool {
	return h.paired != (verbs.Endpoint{}) && h.paired != e.local ||
		e.paired != (verbs.Endpoint{}) && e.paired != h.qp
}

func (e *verbsEndpoint) admit(c net.Conn) {
	e.in = nil
	if c != nil {
		e.in = newCtlConn(c)
	}
}

func (e *verbsEndpoint) reply(c net.Conn, h verbsHello, verdict answer) (answer, error) {
	if verdict == answerAccepted {
		if err := e.pair(h.qp); errors.Is(err, errPairedElsewhere) {
			verdict = answerWrongPeer
		} else if err != nil {
			verdict = answerQPFailed
		}
	}
	a := verbsAnswer{version: verbsProtocol.version, verdict: verdict}
	if verdict == answerAccepted {
		a.qp = e.local
		a.notify = notifyTarget{addr: e.notifyMR.Addr(), rkey: e.notifyMR.RKey()}
	}
	var ab [verbsAnswerLen]byte
	err := putVerbsAnswer(&ab, a)
	if err == nil {
		_, err = c.Write(ab[:])
	}
	return verdict, err
}

func (e *verbsEndpoint) start(c net.Conn, h verbsHello) {
	e.log.Info("rdma: accepted a peer", "from", c.RemoteAddr().String(), "qp", h.qp.String())
	e.mu.Lock()
	cc := e.in
	e.mu.Unlock()
	e.wg.Add(2)
	go e.serve(cc)
	go e.lend(cc)
}

// pair connects the queue pair to the peer's, posts its receives and
// starts its poller, unless it is connected to that peer's already. A
// queue pair that fails to connect cannot be used again: that breaks the
// transport.
func (e *verbsEndpoint) pair(peer verbs.Endpoint) error {
	e.pairMu.Lock()
	defer e.pairMu.Unlock()
	e.mu.Lock()
	paired, down := e.paired, e.isDown()
	e.mu.Unlock()
	switch {
	case down:
		return errClosed
	case paired == peer:
		return nil
	case paired != verbs.Endpoint{}:
		return fmt.Errorf("%w (%v), not %v", errPairedElsewhere, paired, peer)
	}
	err := e.qp.Connect(e.local, peer)
	for i := 0; err == nil && i < verbsRecvDepth; i++ {
		err = e.qp.PostRecv(recvTag|uint64(i), verbs.SGE{})
	}
	if err != nil {
		err = fmt.Errorf("connect queue pair %v to %v: %w", e.local, peer, err)
		e.ev.fail(err)
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.isDown() {
		return errClosed
	}
	e.paired = peer
	e.wg.Add(1)
	go e.poll()
	return nil
}

func (e *verbsEndpoint) connect(ctx context.Context, part []byte) (string, error) {
	var hb [verbsHelloLen]byte
	var ab [verbsAnswerLen]byte
	var ans verbsAnswer
	return e.sideChannel.connect(ctx, part, hb[:], ab[:],
		func(a tcpPart, from uint64) error {
			h := hello{version: verbsProtocol.version, to: a.nonce, from: from}
			return putVerbsHello(&hb, verbsHello{hello: h, qp: e.local, paired: e.paired})
		},
		func(a tcpPart) error {
			var err error
			ans, err = parseVerbsAnswer(&ab)
			switch {
			case err != nil:
				return fmt.Errorf("handshake with %s: %w", a.hostport, err)
			case ans.verdict == answerVersion:
				return fmt.Errorf("%s speaks verbs protocol version %d, this transport %d: %w",
					a.hostport, ans.version, verbsProtocol.version, ErrUnsupported)
			case ans.verdict == answerQPFailed:
				return fmt.Errorf("%s refused: its queue pair would not connect to this one's: %w", a.hostport, ErrBroken)
			case ans.verdict != answerAccepted:
				return fmt.Errorf("%s %v: %w", a.hostport, ans.verdict, ErrInvalid)
			}
			return e.pair(ans.qp)
		},
		func(c *net.TCPConn) {
			e.out, e.peerNotify = newCtlConn(c), ans.notify
			e.wg.Add(1)
			go e.converse(e.out)
		})
}

// shutdown stops everything without waiting for goroutines: the
// listener, the side channel, and the queue pair, whose destruction is
// what makes the device let go of every buffer of this transport's
// operations in flight; those then fail with the transport's error.
func (e *verbsEndpoint) shutdown() {
	var revokes map[uint64]chan struct{}
	stopped := e.stop(func() []io.Closer {
		revokes, e.revokes = e.revokes, nil
		var mine []io.Closer
		for _, cc := range []*ctlConn{e.in, e.out} {
			if cc != nil {
				mine = append(mine, cc.c)
			}
		}
		return mine
	})
	if !stopped {
		return
	}
	if err := e.qp.Close(); err != nil {
		e.log.Warn("rdma: destroying the queue pair failed", "err", err)
	}
	err := e.ev.fail(errClosed) // what ended the transport
	e.mu.Lock()
	var pending []*op
	for i := range e.flights {
		if f := &e.flights[i]; f.o != nil && !f.delivered {
			f.delivered = true
			pending = append(pending, f.o)
		}
	}
	e.mu.Unlock()
	for _, o := range pending {
		o.done <- err
	}
	for _, c := range revokes {
		close(c) // the queue pair is gone: the peer cannot reach the memory through it
	}
}

// wait waits for the endpoint's goroutines, then gives back what it holds
// of the device.
func (e *verbsEndpoint) wait() {
	e.wg.Wait()
	e.release()
}

// release closes the endpoint's queues and regions and its hold on the
// device.
func (e *verbsEndpoint) release() {
	e.released.Do(func() {
		// Close on a nil object is a no-op: setup may have stopped short.
		errs := []error{e.qp.Close(), e.cq.Close(), e.scratchMR.Close(), e.notifyMR.Close()}
		e.dev.unexport(e)
		errs = append(errs, e.dev.release())
		if err := errors.Join(errs...); err != nil {
			e.log.Warn("rdma: releasing the device failed", "device", e.dev.name, "err", err)
		}
	})
}
