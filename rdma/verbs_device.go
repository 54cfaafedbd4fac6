package rdma

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gocomms/gocomms/rdma/verbs"
)

// verbsDevice is an RDMA device that the verbs provider opened, shared by
// every verbs transport of the process that uses it: one context, one
// protection domain, and the memory regions of the Memory registered with
// it, by key. Sharing follows from Register being process-wide: a buffer
// of weights is registered once, however many peers read it, and pinning
// and registering it once per peer would multiply the cost of the
// largest buffers a process has.
//
// A Memory is registered with the device the first time a transport
// needs it, as the source or destination of a local operation or because
// a peer asked for its rkey, and stays registered until Deregister or
// until the last verbs transport on the device closes. Deregister knows
// nothing of devices, so the region holds the Memory's access lock shared
// for as long as the device may touch the buffer, and a watcher that sees
// the Memory deregistered (dead set, the lock awaited) retires the region:
// it revokes the rkey from every peer that learned it, waits for the
// operations in flight on it, deregisters it, and only then lets the lock
// go, so that Deregister returns once no device touches the buffer.
type verbsDevice struct {
	name    string
	ctx     *verbs.Context
	pd      *verbs.PD
	access  verbs.Access // of every region
	atomics bool         // the device performs atomics

	users int // endpoints using the device; under verbsDevices.mu

	regMu   sync.Mutex // serializes registrations, which may be slow, outside mu
	mu      sync.Mutex
	regions map[uint64]*region // by key

	wake chan struct{} // capacity 1: a region was added
	stop chan struct{} // closed when the last user has gone
	wg   sync.WaitGroup
}

// region is a Memory registered with a device.
type region struct {
	m         *Memory
	mr        *verbs.MR
	base, end uint64       // the buffer's address range
	refs      atomic.Int64 // local operations in flight with a view of it
	dying     bool         // being retired: no new user; under the device's mu
	exporters map[*verbsEndpoint]struct{}
}

// verbsDevices are the open devices, by name.
var verbsDevices = struct {
	mu sync.Mutex
	m  map[string]*verbsDevice
}{m: make(map[string]*verbsDevice)}

// retirePoll is how often the watcher looks for deregistered Memory, and
// how often a retirement looks for local operations to end.
const retirePoll = time.Millisecond

// acquireVerbsDevice opens the device called name ("" for the first one
// listed), or returns the one open already, for one more user.
func acquireVerbsDevice(name string) (*verbsDevice, error) {
	lib, err := verbs.Open()
	if err != nil {
		return nil, err
	}
	if name == "" {
		devs, err := lib.Devices()
		if err != nil {
			return nil, err
		}
		name = devs[0].Name
	}
	verbsDevices.mu.Lock()
	defer verbsDevices.mu.Unlock()
	if d := verbsDevices.m[name]; d != nil {
		d.users++
		return d, nil
	}
	ctx, err := lib.OpenDevice(name)
	if err != nil {
		return nil, err
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		ctx.Close()
		return nil, err
	}
	d := &verbsDevice{
		name:    name,
		ctx:     ctx,
		pd:      pd,
		access:  verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead,
		atomics: ctx.Attr().Atomic != verbs.AtomicNone,
		users:   1,
		regions: make(map[uint64]*region),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	if d.atomics {
		d.access |= verbs.AccessRemoteAtomic
	}
	verbsDevices.m[name] = d
	d.wg.Add(1)
	go d.watch()
	return d, nil
}

// release gives up one user's hold; the last one closes the device,
// deregistering every region left.
func (d *verbsDevice) release() error {
	verbsDevices.mu.Lock()
	d.users--
	last := d.users == 0
	if last {
		delete(verbsDevices.m, d.name)
	}
	verbsDevices.mu.Unlock()
	if !last {
		return nil
	}
	close(d.stop)
	d.wg.Wait()
	d.mu.Lock()
	left := d.regions
	d.regions = nil
	d.mu.Unlock()
	var errs []error
	for _, r := range left {
		errs = append(errs, r.mr.Close())
		r.m.access.RUnlock()
	}
	errs = append(errs, d.ctx.Close())
	return errors.Join(errs...)
}

// regionOf returns m's region, registering m with the device if it has
// none, or ErrUnregistered where m is deregistered, or being
// deregistered. m must not be empty: the device registers no empty
// buffer, and there is nothing in one to reach.
func (d *verbsDevice) regionOf(m *Memory) (*region, error) {
	d.mu.Lock()
	r := d.regions[m.key]
	d.mu.Unlock()
	if r != nil {
		return r, nil
	}
	d.regMu.Lock()
	defer d.regMu.Unlock()
	d.mu.Lock()
	r = d.regions[m.key]
	d.mu.Unlock()
	if r != nil {
		return r, nil
	}
	// Only Deregister takes the lock exclusively, once it has set dead:
	// TryRLock fails while it waits, and waiting here would hold up the
	// side channel that its retirements may need.
	if !m.access.TryRLock() {
		return nil, ErrUnregistered
	}
	if m.dead.Load() {
		m.access.RUnlock()
		return nil, ErrUnregistered
	}
	mr, err := d.pd.RegMR(m.buf, d.access)
	if err != nil {
		m.access.RUnlock()
		return nil, err
	}
	r = &region{m: m, mr: mr, base: m.base, end: m.base + uint64(len(m.buf)),
		exporters: make(map[*verbsEndpoint]struct{})}
	d.mu.Lock()
	if d.regions == nil { // the device closed meanwhile
		d.mu.Unlock()
		mr.Close()
		m.access.RUnlock()
		return nil, fmt.Errorf("device %s: %w", d.name, verbs.ErrClosed)
	}
	d.regions[m.key] = r
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return r, nil
}

// localRegion returns m's region, registering m with the device if it
// has none, with a reference for an operation in flight on a local view
// of m: the caller drops it with r.refs.Add(-1) once the operation has
// completed.
func (d *verbsDevice) localRegion(m *Memory) (*region, error) {
	if r := d.held(m); r != nil {
		return r, nil
	}
	if _, err := d.regionOf(m); err != nil {
		return nil, err
	}
	if r := d.held(m); r != nil {
		return r, nil
	}
	return nil, ErrUnregistered // retired meanwhile
}

// held returns m's region, with a reference, unless it has none or it is
// being retired.
func (d *verbsDevice) held(m *Memory) *region {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.regions[m.key]; r != nil && r.m == m && !r.dying {
		r.refs.Add(1)
		return r
	}
	return nil
}

// export records that e's peer is told r's rkey, unless r is being
// retired.
func (d *verbsDevice) export(r *region, e *verbsEndpoint) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.dying || d.regions == nil {
		return false
	}
	r.exporters[e] = struct{}{}
	return true
}

// unexport forgets e, which has shut down, as a holder of rkeys.
func (d *verbsDevice) unexport(e *verbsEndpoint) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.regions {
		delete(r.exporters, e)
	}
}

// watch retires the regions of deregistered Memory until the device
// closes. It looks every retirePoll while there are regions, and sleeps
// while there are none.
func (d *verbsDevice) watch() {
	defer d.wg.Done()
	tick := time.NewTimer(retirePoll)
	defer tick.Stop()
	for {
		d.mu.Lock()
		idle := len(d.regions) == 0
		d.mu.Unlock()
		if idle {
			select {
			case <-d.wake:
			case <-d.stop:
				return
			}
		}
		tick.Reset(retirePoll)
		select {
		case <-tick.C:
		case <-d.stop:
			return
		}
		d.mu.Lock()
		for _, r := range d.regions {
			if r.dying || !r.m.dead.Load() {
				continue
			}
			r.dying = true
			peers := make([]*verbsEndpoint, 0, len(r.exporters))
			for e := range r.exporters {
				peers = append(peers, e)
			}
			d.wg.Add(1)
			go d.retire(r, peers)
		}
		d.mu.Unlock()
	}
}

// retire revokes r's rkey from the peers that were told it, waits for
// them to release it and for local operations on r to end, and then
// deregisters r and lets its Memory's Deregister return.
func (d *verbsDevice) retire(r *region, peers []*verbsEndpoint) {
	defer d.wg.Done()
	released := make([]<-chan struct{}, len(peers))
	for i, e := range peers {
		released[i] = e.revoke(r.m.key)
	}
	for _, c := range released {
		<-c // closed by the peer's release, or when the transport shuts down
	}
	for r.refs.Load() != 0 {
		select {
		case <-time.After(retirePoll):
		case <-d.stop:
			return // the device closes, and release takes r
		}
	}
	d.mu.Lock()
	mine := d.regions != nil && d.regions[r.m.key] == r
	if mine {
		delete(d.regions, r.m.key)
	}
	d.mu.Unlock()
	if mine {
		r.mr.Close() // fails only with the device, whose close deregisters r
		r.m.access.RUnlock()
	}
}

// addrOf returns the address of b's first byte, as the device names it.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }
