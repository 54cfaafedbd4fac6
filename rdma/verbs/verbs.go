package verbs

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
)

// LibraryName is the file Open loads: libibverbs' soname since its 1.0
// release, today shipped by rdma-core (packages libibverbs1, libibverbs).
const LibraryName = "libibverbs.so.1"

// loadMu serializes loading: the C side binds its table of functions once
// per process.
var loadMu sync.Mutex

// Library is libibverbs, loaded into this process by Open. It has no
// Close: the library stays loaded for the life of the process, because
// the providers it loads, and contexts opened through it, may outlive any
// one handle on it.
type Library struct {
	opened bool
}

// Open loads libibverbs. Where it cannot, the error wraps ErrNoLibrary
// and ErrUnavailable and carries the loader's reason; where this binary
// cannot use it at all (built without cgo, or not on Linux) the error
// wraps ErrUnavailable and says which. Open may be called any number of
// times.
func Open() (*Library, error) { return openLibrary(LibraryName) }

func openLibrary(name string) (*Library, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if err := sysLoad(name); err != nil {
		return nil, err
	}
	return &Library{opened: true}, nil
}

func (l *Library) check(op string) error {
	if l == nil || !l.opened {
		return &OpError{Op: op, Err: invalid("Library not made by Open")}
	}
	return nil
}

// Devices lists the RDMA devices libibverbs finds. None is an error that
// wraps ErrNoDevice (and ErrUnavailable), saying how to look for one.
func (l *Library) Devices() ([]DeviceInfo, error) {
	if err := l.check("ibv_get_device_list"); err != nil {
		return nil, err
	}
	devs, err := sysDevices()
	switch {
	case errors.Is(err, syscall.ENOSYS):
		// rdma-core's answer when the kernel has no verbs support at all
		return nil, noDevice("the kernel has no RDMA verbs support (ENOSYS)")
	case err != nil:
		return nil, &OpError{Op: "ibv_get_device_list", Err: err}
	case len(devs) == 0:
		return nil, noDevice("the list is empty")
	}
	return devs, nil
}

func noDevice(why string) error {
	return errkind.Of("rdma/verbs: libibverbs lists no RDMA device: "+why+
		"; `ibv_devices` lists what libibverbs sees and /sys/class/infiniband what the kernel "+
		"found (Soft-RoCE makes one from an Ethernet port: "+
		"`rdma link add rxe0 type rxe netdev eth0`, needs the rdma_rxe module)", ErrNoDevice, nil)
}

// OpenDevice opens the device called name, or the first one listed when
// name is "". It fails with ErrNoDevice when there is none, or none of
// that name.
func (l *Library) OpenDevice(name string) (*Context, error) {
	devs, err := l.Devices()
	if err != nil {
		return nil, err
	}
	want := name
	if want == "" {
		want = devs[0].Name
	}
	if !slices.ContainsFunc(devs, func(d DeviceInfo) bool { return d.Name == want }) {
		names := make([]string, len(devs))
		for i, d := range devs {
			names[i] = d.Name
		}
		return nil, errkind.Of(fmt.Sprintf("rdma/verbs: no RDMA device %q; libibverbs lists %s",
			name, strings.Join(names, ", ")), ErrNoDevice, nil)
	}
	h, err := sysOpenDevice(want)
	if err != nil {
		return nil, &OpError{Op: "ibv_open_device", Device: want, Err: err}
	}
	attr, err := sysQueryDevice(h)
	if err != nil {
		_ = sysCloseDevice(h) // the query's failure is the one to report
		return nil, &OpError{Op: "ibv_query_device", Device: want, Err: err}
	}
	return &Context{
		name: want,
		attr: attr,
		h:    h,
		pds:  make(map[*PD]struct{}),
		mrs:  make(map[*MR]struct{}),
		cqs:  make(map[*CQ]struct{}),
		qps:  make(map[*QP]struct{}),
	}, nil
}

// Context is an open device. It owns every object made from it: its
// Close closes them all, and an object's methods fail with ErrClosed
// after it. All of its methods, and those of its objects, are safe for
// concurrent use.
//
// Locking: mu guards the device handle, the object sets, every PD's and
// MR's handle and every use count; a CQ's and a QP's own mutex guard
// their handle and their fast path (polling, posting), which never takes
// mu. Where both are held, mu is taken first.
type Context struct {
	name string
	attr DeviceAttr

	mu  sync.Mutex
	h   unsafe.Pointer // struct ibv_context *; nil once closed
	pds map[*PD]struct{}
	mrs map[*MR]struct{}
	cqs map[*CQ]struct{}
	qps map[*QP]struct{}
}

// Name returns the device's name.
func (c *Context) Name() string {
	if c == nil {
		return ""
	}
	return c.name
}

// Attr returns the device's attributes, as queried when it was opened.
func (c *Context) Attr() DeviceAttr {
	if c == nil {
		return DeviceAttr{}
	}
	return c.attr
}

func (c *Context) opErr(op string, err error) error {
	return &OpError{Op: op, Device: c.name, Err: err}
}

// lock takes mu and returns nil when the context is open; otherwise it
// returns why not, holding nothing.
func (c *Context) lock(op string) error {
	if c == nil || c.pds == nil {
		return &OpError{Op: op, Err: invalid("Context not made by OpenDevice")}
	}
	c.mu.Lock()
	if c.h == nil {
		c.mu.Unlock()
		return c.opErr(op, ErrClosed)
	}
	return nil
}

func (c *Context) checkPort(op string, port uint8) error {
	if port == 0 || int(port) > c.attr.Ports {
		return c.opErr(op, invalid("port %d: the device has ports 1 to %d", port, c.attr.Ports))
	}
	return nil
}

// QueryPort returns the attributes of port (counted from 1).
func (c *Context) QueryPort(port uint8) (PortAttr, error) {
	if err := c.lock("ibv_query_port"); err != nil {
		return PortAttr{}, err
	}
	defer c.mu.Unlock()
	if err := c.checkPort("ibv_query_port", port); err != nil {
		return PortAttr{}, err
	}
	a, err := sysQueryPort(c.h, port)
	if err != nil {
		return PortAttr{}, c.opErr(fmt.Sprintf("ibv_query_port(%d)", port), err)
	}
	return a, nil
}

// QueryGID returns entry index of port's GID table. On RoCE the table
// holds one entry per address and RoCE version of the port's network
// device, and unused entries are zero.
func (c *Context) QueryGID(port uint8, index int) (GID, error) {
	if err := c.lock("ibv_query_gid"); err != nil {
		return GID{}, err
	}
	defer c.mu.Unlock()
	if err := c.checkPort("ibv_query_gid", port); err != nil {
		return GID{}, err
	}
	if index < 0 || index > 0xffff {
		return GID{}, c.opErr("ibv_query_gid", invalid("GID index %d", index))
	}
	g, err := sysQueryGID(c.h, port, index)
	if err != nil {
		return GID{}, c.opErr(fmt.Sprintf("ibv_query_gid(%d, %d)", port, index), err)
	}
	return g, nil
}

// Close destroys every object made from the context that is still open,
// queue pairs first, then closes the device. Errors on the way are
// joined; the device is closed regardless, which releases in the kernel
// anything that failed to close before it. Close is idempotent.
func (c *Context) Close() error {
	if c == nil || c.pds == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return nil
	}
	var errs []error
	for q := range c.qps {
		errs = append(errs, q.closeLocked())
	}
	for m := range c.mrs {
		errs = append(errs, m.closeLocked())
	}
	for q := range c.cqs {
		errs = append(errs, q.closeLocked())
	}
	for p := range c.pds {
		errs = append(errs, p.closeLocked())
	}
	if err := sysCloseDevice(c.h); err != nil {
		errs = append(errs, c.opErr("ibv_close_device", err))
	}
	c.h = nil
	for q := range c.qps {
		q.mu.Lock()
		q.h = nil
		q.mu.Unlock()
	}
	for m := range c.mrs {
		m.forget()
	}
	for q := range c.cqs {
		q.mu.Lock()
		q.h = nil
		q.mu.Unlock()
	}
	for p := range c.pds {
		p.h = nil
	}
	clear(c.qps)
	clear(c.mrs)
	clear(c.cqs)
	clear(c.pds)
	return errors.Join(errs...)
}

// PD is a protection domain: memory regions and queue pairs that may
// be used together.
type PD struct {
	ctx   *Context
	h     unsafe.Pointer // struct ibv_pd *; guarded by ctx.mu
	users int            // MRs and QPs made with it; guarded by ctx.mu
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) {
	if err := c.lock("ibv_alloc_pd"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	h, err := sysAllocPD(c.h)
	if err != nil {
		return nil, c.opErr("ibv_alloc_pd", err)
	}
	p := &PD{ctx: c, h: h}
	c.pds[p] = struct{}{}
	return p, nil
}

// Close deallocates the protection domain. It fails with ErrBusy while
// memory regions or queue pairs made with it are open. Idempotent.
func (p *PD) Close() error {
	if p == nil || p.ctx == nil {
		return nil
	}
	if err := p.ctx.lock("ibv_dealloc_pd"); err != nil {
		return ignoreClosed(err)
	}
	defer p.ctx.mu.Unlock()
	return p.closeLocked()
}

func (p *PD) closeLocked() error {
	if p.h == nil {
		return nil
	}
	if p.users > 0 {
		return p.ctx.opErr("ibv_dealloc_pd",
			fmt.Errorf("%w: %d memory regions and queue pairs still use the protection domain",
				ErrBusy, p.users))
	}
	if err := sysDeallocPD(p.h); err != nil {
		return p.ctx.opErr("ibv_dealloc_pd", err)
	}
	p.h = nil
	delete(p.ctx.pds, p)
	return nil
}

// MR is a registered memory region: memory the device may read and
// write by itself, named by LKey in local requests and by RKey in a
// peer's.
//
// A region made from Go memory keeps that memory pinned
// (runtime.Pinner) from RegMR until Close: the device holds its address
// all that time, so it must neither move nor be freed. The caller must
// not let the slice go while the region is open, and must not read what
// a peer may still be writing: the device writes behind Go's back, so
// knowing that data arrived is the completion protocol's job.
type MR struct {
	ctx    *Context
	pd     *PD
	buf    []byte
	addr   uint64
	lkey   uint32
	rkey   uint32
	closed atomic.Bool

	h   unsafe.Pointer // struct ibv_mr *; guarded by ctx.mu
	pin runtime.Pinner // guarded by ctx.mu
}

// RegMR registers buf with the device for the given access. Remote writes
// and atomics need AccessLocalWrite too (the verbs' rule, checked here
// to give a clearer error than the device's EINVAL).
func (p *PD) RegMR(buf []byte, access Access) (*MR, error) {
	if p == nil || p.ctx == nil {
		return nil, &OpError{Op: "ibv_reg_mr", Err: invalid("PD not made by AllocPD")}
	}
	c := p.ctx
	switch {
	case len(buf) == 0:
		return nil, c.opErr("ibv_reg_mr", invalid("empty buffer"))
	case access&^accessKnown != 0:
		return nil, c.opErr("ibv_reg_mr", invalid("unknown access bits %v", access&^accessKnown))
	case access&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && access&AccessLocalWrite == 0:
		return nil, c.opErr("ibv_reg_mr", invalid("access %v: remote writes and atomics need AccessLocalWrite", access))
	}
	if err := c.lock("ibv_reg_mr"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if p.h == nil {
		return nil, c.opErr("ibv_reg_mr", ErrClosed)
	}
	m := &MR{ctx: c, pd: p, buf: buf, addr: uint64(uintptr(unsafe.Pointer(&buf[0])))}
	m.pin.Pin(&buf[0])
	h, lkey, rkey, err := sysRegMR(p.h, buf, access)
	if err != nil {
		m.pin.Unpin()
		return nil, c.opErr(fmt.Sprintf("ibv_reg_mr(%d bytes, %v)", len(buf), access), err)
	}
	m.h, m.lkey, m.rkey = h, lkey, rkey
	p.users++
	c.mrs[m] = struct{}{}
	return m, nil
}

// Addr returns the address of the region's first byte, as the device
// and a peer's requests name it.
func (m *MR) Addr() uint64 {
	if m == nil {
		return 0
	}
	return m.addr
}

// Len returns the region's length in bytes.
func (m *MR) Len() int {
	if m == nil {
		return 0
	}
	return len(m.buf)
}

// LKey returns the key local requests name the region by.
func (m *MR) LKey() uint32 {
	if m == nil {
		return 0
	}
	return m.lkey
}

// RKey returns the key a peer's requests name the region by.
func (m *MR) RKey() uint32 {
	if m == nil {
		return 0
	}
	return m.rkey
}

// Bytes returns the registered memory.
func (m *MR) Bytes() []byte {
	if m == nil {
		return nil
	}
	return m.buf
}

// SGE returns the local range [off, off+n) of the region, checked.
func (m *MR) SGE(off, n int) (SGE, error) {
	if err := m.checkRange("SGE", off, n); err != nil {
		return SGE{}, err
	}
	return SGE{Addr: m.addr + uint64(off), Length: uint32(n), LKey: m.lkey}, nil
}

// Remote returns what a peer needs to reach offset off of the region;
// the peer has to be told, and keeps to the length it is told.
func (m *MR) Remote(off int) (Remote, error) {
	if err := m.checkRange("Remote", off, 0); err != nil {
		return Remote{}, err
	}
	return Remote{Addr: m.addr + uint64(off), RKey: m.rkey}, nil
}

func (m *MR) checkRange(op string, off, n int) error {
	if m == nil || m.ctx == nil {
		return &OpError{Op: op, Err: invalid("MR not made by RegMR")}
	}
	if m.closed.Load() {
		return m.ctx.opErr(op, ErrClosed)
	}
	if off < 0 || n < 0 || off > len(m.buf) || n > len(m.buf)-off || n > 1<<31 {
		return m.ctx.opErr(op, invalid("range [%d, %d+%d) of a %d-byte region", off, off, n, len(m.buf)))
	}
	return nil
}

// Close deregisters the region and unpins its memory. Requests still
// using it fail with a protection or access error. Idempotent.
func (m *MR) Close() error {
	if m == nil || m.ctx == nil {
		return nil
	}
	if err := m.ctx.lock("ibv_dereg_mr"); err != nil {
		return ignoreClosed(err)
	}
	defer m.ctx.mu.Unlock()
	return m.closeLocked()
}

func (m *MR) closeLocked() error {
	if m.h == nil {
		return nil
	}
	if err := sysDeregMR(m.h); err != nil {
		return m.ctx.opErr("ibv_dereg_mr", err)
	}
	m.pd.users--
	m.forget()
	delete(m.ctx.mrs, m)
	return nil
}

func (m *MR) forget() {
	m.h = nil
	m.closed.Store(true)
	m.pin.Unpin()
}

// CQ is a completion queue. Poll is safe for concurrent use, though a
// queue usually has one poller.
type CQ struct {
	ctx   *Context
	depth int
	users int // QPs that complete to it; guarded by ctx.mu

	mu  sync.Mutex
	h   unsafe.Pointer // struct ibv_cq *; nil once closed
	sys cqSys          // poll scratch, guarded by mu
}

// CreateCQ creates a completion queue for at least depth entries. The
// queue must hold every completion not yet polled: one that overflows
// puts its queue pairs in the error state.
func (c *Context) CreateCQ(depth int) (*CQ, error) {
	if depth <= 0 || (c != nil && c.attr.MaxCQE > 0 && depth > c.attr.MaxCQE) {
		var limit int
		if c != nil {
			limit = c.attr.MaxCQE
		}
		return nil, &OpError{Op: "ibv_create_cq", Device: c.Name(),
			Err: invalid("depth %d, device allows 1 to %d", depth, limit)}
	}
	if err := c.lock("ibv_create_cq"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	h, actual, err := sysCreateCQ(c.h, depth)
	if err != nil {
		return nil, c.opErr(fmt.Sprintf("ibv_create_cq(%d)", depth), err)
	}
	q := &CQ{ctx: c, depth: actual, h: h}
	c.cqs[q] = struct{}{}
	return q, nil
}

// Depth returns how many entries the queue holds, as the device granted.
func (q *CQ) Depth() int {
	if q == nil {
		return 0
	}
	return q.depth
}

// Poll fills dst with completions, oldest first, and returns how many;
// 0 when there are none. It does not wait. Poll allocates nothing unless
// a completion failed.
func (q *CQ) Poll(dst []Completion) (int, error) {
	if q == nil || q.ctx == nil {
		return 0, &OpError{Op: "ibv_poll_cq", Err: invalid("CQ not made by CreateCQ")}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.h == nil {
		return 0, q.ctx.opErr("ibv_poll_cq", ErrClosed)
	}
	n, err := sysPoll(q, dst)
	if err != nil {
		return n, q.ctx.opErr("ibv_poll_cq", err)
	}
	return n, nil
}

// Close destroys the queue. It fails with ErrBusy while queue pairs that
// complete to it are open. Idempotent.
func (q *CQ) Close() error {
	if q == nil || q.ctx == nil {
		return nil
	}
	if err := q.ctx.lock("ibv_destroy_cq"); err != nil {
		return ignoreClosed(err)
	}
	defer q.ctx.mu.Unlock()
	return q.closeLocked()
}

func (q *CQ) closeLocked() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.h == nil {
		return nil
	}
	if q.users > 0 {
		return q.ctx.opErr("ibv_destroy_cq",
			fmt.Errorf("%w: %d queue pairs still complete to it", ErrBusy, q.users))
	}
	if err := sysDestroyCQ(q.h); err != nil {
		return q.ctx.opErr("ibv_destroy_cq", err)
	}
	q.h = nil
	delete(q.ctx.cqs, q)
	return nil
}

type qpState uint8

const (
	qpReset qpState = iota
	qpInit
	qpRTR
	qpRTS
)

// QP is a reliable-connected queue pair. Its posts are safe for
// concurrent use (a mutex orders them; requests start in the order their
// posts took it).
type QP struct {
	ctx        *Context
	pd         *PD
	send, recv *CQ
	qpn        uint32
	caps       QPCaps

	mu    sync.Mutex
	h     unsafe.Pointer // struct ibv_qp *; nil once closed
	state qpState
}

// CreateQP creates a reliable-connected queue pair in pd whose sends
// complete to send and whose receives complete to recv (which may be the
// same queue). Zero fields of caps take QPCaps' defaults.
func (c *Context) CreateQP(pd *PD, send, recv *CQ, caps QPCaps) (*QP, error) {
	if err := c.lock("ibv_create_qp"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	switch {
	case pd == nil || send == nil || recv == nil:
		return nil, c.opErr("ibv_create_qp", invalid("nil PD or CQ"))
	case pd.ctx != c || send.ctx != c || recv.ctx != c:
		return nil, c.opErr("ibv_create_qp", invalid("PD or CQ of another context"))
	case pd.h == nil:
		return nil, c.opErr("ibv_create_qp", fmt.Errorf("PD: %w", ErrClosed))
	}
	for _, q := range []*CQ{send, recv} {
		q.mu.Lock()
		closed := q.h == nil
		q.mu.Unlock()
		if closed {
			return nil, c.opErr("ibv_create_qp", fmt.Errorf("CQ: %w", ErrClosed))
		}
	}
	caps = caps.withDefaults()
	h, qpn, got, err := sysCreateQP(pd.h, send.h, recv.h, caps)
	if err != nil {
		return nil, c.opErr(fmt.Sprintf("ibv_create_qp(%+v)", caps), err)
	}
	q := &QP{ctx: c, pd: pd, send: send, recv: recv, qpn: qpn, caps: got, h: h}
	pd.users++
	send.users++
	recv.users++
	c.qps[q] = struct{}{}
	return q, nil
}

func (c QPCaps) withDefaults() QPCaps {
	def := func(v *uint32, d uint32) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxSendWR, 128)
	def(&c.MaxRecvWR, 128)
	def(&c.MaxSendSGE, 1)
	def(&c.MaxRecvSGE, 1)
	return c
}

// QPN returns the queue pair's number, which a peer connects to.
func (q *QP) QPN() uint32 {
	if q == nil {
		return 0
	}
	return q.qpn
}

// Caps returns the queue pair's sizes, as the device granted them.
func (q *QP) Caps() QPCaps {
	if q == nil {
		return QPCaps{}
	}
	return q.caps
}

// Connection parameters. The timeouts follow common practice (NCCL and
// perftest choose alike); they bound how long a lost peer goes unnoticed.
const (
	ackTimeout  = 14  // 4.096 µs << 14 ≈ 67 ms before a request is resent
	retryCount  = 7   // resends before StatusRetryExcErr: about 0.5 s in all
	rnrRetry    = 7   // 7 means without limit: a write with immediate data waits for a receive
	minRNRTimer = 12  // 0.64 ms between such tries
	hopLimit    = 255 // RoCE v2 crosses routers
	maxRdAtomic = 16  // reads and atomics outstanding: more rarely helps, some devices allow no more
)

// Endpoint returns what the peer needs to connect to this queue pair:
// its number, psn as the first sequence number it will send (24 bits;
// random is customary, so that a stale packet from an earlier connection
// is not taken for new), and the address of the local port.
//
// On RoCE (an Ethernet port) the address is the GID at gidIndex, which
// must be set; `ibv_devinfo -v` or `show_gids` list the table, and which
// entry is RoCE v2 over which IP address. On InfiniBand it is the port's
// LID, and gidIndex, when not negative, adds the GID (for a peer on
// another subnet). A port that is not active is an error wrapping
// ErrUnavailable.
func (q *QP) Endpoint(port uint8, gidIndex int, psn uint32) (Endpoint, error) {
	if err := q.check("endpoint"); err != nil {
		return Endpoint{}, err
	}
	c := q.ctx
	if psn > maxPSN {
		return Endpoint{}, c.opErr("endpoint", invalid("PSN %#x is over 24 bits", psn))
	}
	pa, err := c.QueryPort(port)
	if err != nil {
		return Endpoint{}, err
	}
	if pa.State != PortActive && pa.State != PortActiveDefer {
		return Endpoint{}, &OpError{Op: "endpoint", Device: c.name, Err: errkind.Of(fmt.Sprintf("port %d is %v, not ACTIVE (`ibv_devinfo` shows ports' states)", port, pa.State), ErrUnavailable, nil)}
	}
	e := Endpoint{QPN: q.qpn, PSN: psn, LID: pa.LID, Port: port, MTU: pa.ActiveMTU,
		RdAtomic: uint8(max(1, min(c.attr.MaxQPRdAtomic, maxRdAtomic)))}
	switch {
	case gidIndex < 0 && pa.LinkLayer == LinkEthernet:
		return Endpoint{}, c.opErr("endpoint", invalid("port %d is RoCE: a GID index is needed", port))
	case gidIndex > 255 || (gidIndex >= 0 && pa.GIDTableLen > 0 && gidIndex >= pa.GIDTableLen):
		return Endpoint{}, c.opErr("endpoint", invalid("GID index %d: port %d has %d",
			gidIndex, port, pa.GIDTableLen))
	case gidIndex >= 0:
		g, err := c.QueryGID(port, gidIndex)
		if err != nil {
			return Endpoint{}, err
		}
		if g.IsZero() && pa.LinkLayer == LinkEthernet {
			return Endpoint{}, c.opErr("endpoint", invalid(
				"GID index %d of port %d is empty (`ibv_devinfo -v` lists the table)", gidIndex, port))
		}
		e.GID, e.GIDIndex = g, uint8(gidIndex)
	}
	if err := e.validate(); err != nil {
		return Endpoint{}, c.opErr("endpoint", err)
	}
	return e, nil
}

// rtr is the receive half of a connection, as Connect computes it for
// the C side.
type rtr struct {
	mtu           MTU
	destQPN       uint32
	rqPSN         uint32
	maxDestRdAtom uint8
	minRNRTimer   uint8
	dlid          uint16
	port          uint8
	global        bool
	sgidIndex     uint8
	hopLimit      uint8
	dgid          GID
}

// Connect moves a new queue pair through INIT and RTR to RTS, connected
// to the remote one: local is what this side's Endpoint returned, remote
// what the peer's did. The path is routed by GID on RoCE, or on
// InfiniBand when the peer has no LID, and by LID otherwise. Each queue
// pair connects once; to reconnect, make a new one.
func (q *QP) Connect(local, remote Endpoint) error {
	if err := q.check("connect"); err != nil {
		return err
	}
	c := q.ctx
	if err := local.validate(); err != nil {
		return c.opErr("connect: local", err)
	}
	if err := remote.validate(); err != nil {
		return c.opErr("connect: remote", err)
	}
	if local.QPN != q.qpn {
		return c.opErr("connect", invalid("local endpoint is QP %#x, this is %#x", local.QPN, q.qpn))
	}
	pa, err := c.QueryPort(local.Port)
	if err != nil {
		return err
	}
	global := pa.LinkLayer == LinkEthernet || remote.LID == 0
	if global && remote.GID.IsZero() {
		return c.opErr("connect", invalid("remote endpoint has no GID, and port %d needs one (%v link)",
			local.Port, pa.LinkLayer))
	}
	r := rtr{
		mtu:           min(local.MTU, remote.MTU),
		destQPN:       remote.QPN,
		rqPSN:         remote.PSN,
		maxDestRdAtom: local.RdAtomic,
		minRNRTimer:   minRNRTimer,
		dlid:          remote.LID,
		port:          local.Port,
		global:        global,
		sgidIndex:     local.GIDIndex,
		hopLimit:      hopLimit,
		dgid:          remote.GID,
	}
	initiator := uint8(max(1, min(int(remote.RdAtomic), c.attr.MaxQPInitRdAtomic, maxRdAtomic)))
	access := AccessRemoteWrite | AccessRemoteRead
	if c.attr.Atomic != AtomicNone {
		access |= AccessRemoteAtomic
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.h == nil:
		return c.opErr("connect", ErrClosed)
	case q.state != qpReset:
		return c.opErr("connect", invalid("QP %#x was connected before", q.qpn))
	}
	if err := sysModifyInit(q.h, local.Port, access); err != nil {
		return c.opErr("ibv_modify_qp(INIT)", err)
	}
	q.state = qpInit
	if err := sysModifyRTR(q.h, r); err != nil {
		return c.opErr("ibv_modify_qp(RTR)", err)
	}
	q.state = qpRTR
	if err := sysModifyRTS(q.h, local.PSN, initiator, ackTimeout, retryCount, rnrRetry); err != nil {
		return c.opErr("ibv_modify_qp(RTS)", err)
	}
	q.state = qpRTS
	return nil
}

// check fails, naming op, if q was not made by CreateQP or is closed.
func (q *QP) check(op string) error {
	if err := q.lock(op); err != nil {
		return err
	}
	q.mu.Unlock()
	return nil
}

// lock is check that, when q is usable, returns holding q.mu, so that q
// stays open while op goes on; the caller unlocks it.
func (q *QP) lock(op string) error {
	if q == nil || q.ctx == nil {
		return &OpError{Op: op, Err: invalid("QP not made by CreateQP")}
	}
	q.mu.Lock()
	if q.h == nil {
		q.mu.Unlock()
		return q.ctx.opErr(op, ErrClosed)
	}
	return nil
}

// wrOpcode is a send request's opcode (enum ibv_wr_opcode).
type wrOpcode int32

const (
	wrWrite       wrOpcode = 0
	wrWriteImm    wrOpcode = 1
	wrSend        wrOpcode = 2
	wrSendImm     wrOpcode = 3
	wrRead        wrOpcode = 4
	wrCompareSwap wrOpcode = 5
	wrFetchAdd    wrOpcode = 6
)

var wrNames = [...]string{"post write", "post write-imm", "post send", "post send-imm",
	"post read", "post compare-swap", "post fetch-add"}

// PostWrite writes local to remote. Flags: Signaled for a completion.
// A full send queue is an error matching syscall.ENOMEM.
func (q *QP) PostWrite(wrID uint64, local SGE, remote Remote, flags SendFlags) error {
	return q.postSend(wrID, wrWrite, flags, 0, local, remote, 0, 0)
}

// PostWriteImm writes local to remote and then consumes a receive posted
// at the peer, completing it with OpRecvWriteImm and imm: the peer learns
// that the data is there. local may be empty (SGE{}) to only notify.
func (q *QP) PostWriteImm(wrID uint64, local SGE, remote Remote, imm uint32, flags SendFlags) error {
	return q.postSend(wrID, wrWriteImm, flags, imm, local, remote, 0, 0)
}

// PostRead reads remote into local.
func (q *QP) PostRead(wrID uint64, local SGE, remote Remote, flags SendFlags) error {
	return q.postSend(wrID, wrRead, flags, 0, local, remote, 0, 0)
}

// PostFetchAdd adds add to the 8-byte value at remote and writes the
// value it had into local (8 bytes). Both must be 8-byte aligned. The
// device reads the value in its own byte order: the host's on Soft-RoCE,
// big-endian on some older NICs (see docs/RDMA-VERBS.md).
func (q *QP) PostFetchAdd(wrID uint64, local SGE, remote Remote, add uint64, flags SendFlags) error {
	return q.postSend(wrID, wrFetchAdd, flags, 0, local, remote, add, 0)
}

// PostCompareSwap replaces the 8-byte value at remote with swap if it
// equals compare, and writes the value it had into local (8 bytes),
// whether it was replaced or not. Alignment and byte order as for
// PostFetchAdd.
func (q *QP) PostCompareSwap(wrID uint64, local SGE, remote Remote, compare, swap uint64, flags SendFlags) error {
	return q.postSend(wrID, wrCompareSwap, flags, 0, local, remote, compare, swap)
}

// PostSend sends local to the peer, into the buffer of a receive it
// posted (two-sided).
func (q *QP) PostSend(wrID uint64, local SGE, flags SendFlags) error {
	return q.postSend(wrID, wrSend, flags, 0, local, Remote{}, 0, 0)
}

// PostRecv posts a receive: local takes a PostSend's data, or nothing
// (SGE{} will do) for a PostWriteImm's notice. Receives may be posted
// once the queue pair is connected.
func (q *QP) PostRecv(wrID uint64, local SGE) error {
	if err := q.lock("post recv"); err != nil {
		return err
	}
	defer q.mu.Unlock()
	if q.state == qpReset {
		return q.ctx.opErr("post recv", invalid("QP %#x is not connected", q.qpn))
	}
	if err := sysPostRecv(q.h, wrID, local); err != nil {
		return q.ctx.opErr("post recv", err)
	}
	return nil
}

func (q *QP) postSend(wrID uint64, op wrOpcode, flags SendFlags, imm uint32, local SGE,
	remote Remote, compareAdd, swap uint64) error {
	if err := q.lock(wrNames[op]); err != nil {
		return err
	}
	defer q.mu.Unlock()
	if flags&^sendFlagsKnown != 0 {
		return q.ctx.opErr(wrNames[op], invalid("unknown send flags %v", flags&^sendFlagsKnown))
	}
	if op == wrFetchAdd || op == wrCompareSwap {
		if local.Length != 8 || local.Addr%8 != 0 || remote.Addr%8 != 0 {
			return q.ctx.opErr(wrNames[op], invalid(
				"atomics take 8 aligned bytes: local %#x+%d, remote %#x", local.Addr, local.Length, remote.Addr))
		}
	}
	if q.state != qpRTS {
		return q.ctx.opErr(wrNames[op], invalid("QP %#x is not connected", q.qpn))
	}
	if err := sysPostSend(q.h, wrID, op, flags, imm, local, remote, compareAdd, swap); err != nil {
		return q.ctx.opErr(wrNames[op], err)
	}
	return nil
}

// Close destroys the queue pair; requests still in flight end with it,
// and completions of earlier ones may still be polled. Idempotent.
func (q *QP) Close() error {
	if q == nil || q.ctx == nil {
		return nil
	}
	if err := q.ctx.lock("ibv_destroy_qp"); err != nil {
		return ignoreClosed(err)
	}
	defer q.ctx.mu.Unlock()
	return q.closeLocked()
}

func (q *QP) closeLocked() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.h == nil {
		return nil
	}
	if err := sysDestroyQP(q.h); err != nil {
		return q.ctx.opErr("ibv_destroy_qp", err)
	}
	q.h = nil
	q.pd.users--
	q.send.users--
	q.recv.users--
	delete(q.ctx.qps, q)
	return nil
}

// ignoreClosed makes Close after the context's Close a no-op: that
// closed everything.
func ignoreClosed(err error) error {
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}
