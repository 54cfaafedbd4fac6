package cuda

import (
	"errors"
	"strings"
	"sync"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
)

// LibraryName is the file Open loads: the CUDA driver's soname, installed
// by the NVIDIA driver (not by the CUDA toolkit, whose libcuda.so is a
// stub for linking).
const LibraryName = "libcuda.so.1"

// loadMu serializes loading: the C side binds its table of entry points
// once per process.
var loadMu sync.Mutex

// Driver is the CUDA driver, loaded into this process and initialized by
// Open. It has no Close: the driver stays loaded for the life of the
// process, since contexts retained through it may outlive any one handle.
type Driver struct {
	version int // as cuDriverGetVersion reports it: 1000*major + 10*minor
}

// Open loads and initializes the CUDA driver. The error matches
// ErrUnavailable wherever CUDA cannot be used, and says why: ErrNoLibrary
// where libcuda.so.1 will not load, ErrNoDevice where it finds no GPU; a
// binary built without cgo, or not for Linux, cannot load it at all. Open
// may be called any number of times.
func Open() (*Driver, error) { return openDriver(LibraryName) }

func openDriver(name string) (*Driver, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if err := sysLoad(name); err != nil {
		return nil, err
	}
	if err := sysInit(); err != nil {
		return nil, initFailed(name, err)
	}
	v, err := sysDriverVersion()
	if err != nil {
		return nil, errkind.Of(prefix+"the driver will not tell its version: "+why(err), ErrUnavailable, err)
	}
	return &Driver{version: v}, nil
}

// initFailed explains why cuInit failed, err being its *Error.
func initFailed(name string, err error) error {
	switch {
	case errors.Is(err, ResultNoDevice):
		return errkind.Of(prefix+"the driver finds no GPU: "+why(err)+"; `nvidia-smi` lists "+
			"what it sees, and CUDA_VISIBLE_DEVICES, where set, hides the GPUs it does not name", ErrNoDevice, err)
	case errors.Is(err, ResultStubLibrary):
		return errkind.Of(prefix+name+" is the CUDA toolkit's stub, not the driver: take the "+
			"toolkit's stubs directory off LD_LIBRARY_PATH, or install the NVIDIA driver", ErrNoLibrary, err)
	}
	return errkind.Of(prefix+"the driver will not initialize: "+why(err), ErrUnavailable, err)
}

// why is err's text without this package's prefix, to quote in another.
func why(err error) string { return strings.TrimPrefix(err.Error(), prefix) }

func (d *Driver) check(op string) error {
	if d == nil || d.version == 0 {
		return invalid(op, "Driver not made by Open")
	}
	return nil
}

// Version returns the CUDA version the driver supports, 12.4 as (12, 4):
// the newest toolkit whose programs it runs. It is (0, 0) for a Driver
// not made by Open.
func (d *Driver) Version() (major, minor int) {
	if d == nil {
		return 0, 0
	}
	return d.version / 1000, d.version % 1000 / 10
}

// Devices lists the GPUs the driver sees, in its order (CUDA_DEVICE_ORDER
// and CUDA_VISIBLE_DEVICES choose it). None is an error that matches
// ErrNoDevice.
func (d *Driver) Devices() ([]*Device, error) {
	const op = "Driver.Devices"
	if err := d.check(op); err != nil {
		return nil, err
	}
	n, err := sysDeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errkind.Of(prefix+"the driver lists no GPU", ErrNoDevice, nil)
	}
	devs := make([]*Device, n)
	for i := range devs {
		dev, err := sysDevice(i)
		if err != nil {
			return nil, err
		}
		dev.listed = true
		devs[i] = &dev
	}
	return devs, nil
}

// Device is a GPU as Driver.Devices found it. Its description is read
// once, when it is listed.
type Device struct {
	listed   bool
	ordinal  int
	handle   int32 // CUdevice
	name     string
	pciBusID string
	totalMem uint64
	ccMajor  int
	ccMinor  int
}

// Ordinal returns the device's place in the driver's list, from 0.
func (d *Device) Ordinal() int {
	if d == nil {
		return 0
	}
	return d.ordinal
}

// Name returns the device's product name, "NVIDIA H100 80GB HBM3".
func (d *Device) Name() string {
	if d == nil {
		return ""
	}
	return d.name
}

// PCIBusID returns the device's PCI address, "0000:65:00.0": what ties it
// to a NIC on the same PCIe switch, and what nvidia-smi shows.
func (d *Device) PCIBusID() string {
	if d == nil {
		return ""
	}
	return d.pciBusID
}

// TotalMem returns the device's memory in bytes.
func (d *Device) TotalMem() uint64 {
	if d == nil {
		return 0
	}
	return d.totalMem
}

// ComputeCapability returns the device's architecture version, 9.0 as
// (9, 0).
func (d *Device) ComputeCapability() (major, minor int) {
	if d == nil {
		return 0, 0
	}
	return d.ccMajor, d.ccMinor
}

// PrimaryContext retains the device's primary context, the one the CUDA
// runtime and libraries such as NCCL and PyTorch use too, so that memory
// and streams are shared with them. Each call returns a new *Context that
// holds one reference; the driver destroys the context when the last
// reference, this package's or another library's, is released.
func (d *Device) PrimaryContext() (*Context, error) {
	const op = "Device.PrimaryContext"
	if d == nil || !d.listed {
		return nil, invalid(op, "Device not listed by Driver.Devices")
	}
	h, err := sysPrimaryCtxRetain(d.handle)
	if err != nil {
		return nil, err
	}
	return &Context{
		dev:     d,
		h:       h,
		mems:    make(map[*DeviceMemory]struct{}),
		hosts:   make(map[*HostMemory]struct{}),
		streams: make(map[*Stream]struct{}),
		events:  make(map[*Event]struct{}),
		modules: make(map[*Module]struct{}),
	}, nil
}

// Context is one reference to a device's primary context. It owns every
// object made from it: its Close frees them all before releasing the
// context, and their methods fail with ErrClosed after it. All of its
// methods, and those of its objects, are safe for concurrent use.
//
// Locking: mu guards h and the object sets; an object is open while it is
// in its set. Calls that use objects hold mu for reading while the driver
// works, so a synchronous copy or a Synchronize delays Close, Alloc and
// the other calls that make or free objects, which hold it for writing.
type Context struct {
	dev *Device

	mu      sync.RWMutex
	h       unsafe.Pointer // CUcontext; nil once closed
	mems    map[*DeviceMemory]struct{}
	hosts   map[*HostMemory]struct{}
	streams map[*Stream]struct{}
	events  map[*Event]struct{}
	modules map[*Module]struct{}
	kernels map[string]*Function // the reduction kernels, once loaded; in modules too
	shared  bool                 // made by Shared: never closed
}

// Device returns the device whose context this is.
func (c *Context) Device() *Device {
	if c == nil {
		return nil
	}
	return c.dev
}

// Handle returns the context's CUcontext, for other CUDA libraries that
// need it current on the thread that calls them, such as NCCL. It is
// valid until Close.
func (c *Context) Handle() uintptr {
	if c == nil {
		return 0
	}
	return uintptr(c.h)
}

func (c *Context) valid(op string) error {
	if c == nil || c.mems == nil {
		return invalid(op, "Context not made by Device.PrimaryContext")
	}
	return nil
}

// rlock takes mu for reading and returns nil when the context is open;
// otherwise it returns why not, holding nothing.
func (c *Context) rlock(op string) error {
	if err := c.valid(op); err != nil {
		return err
	}
	c.mu.RLock()
	if c.h == nil {
		c.mu.RUnlock()
		return closed(op, "the context")
	}
	return nil
}

// lock is rlock for writing.
func (c *Context) lock(op string) error {
	if err := c.valid(op); err != nil {
		return err
	}
	c.mu.Lock()
	if c.h == nil {
		c.mu.Unlock()
		return closed(op, "the context")
	}
	return nil
}

// Close waits for the work queued on the context's open streams, destroys
// them and its open events, unloads its modules, frees its memory, and
// releases the context.
// Errors on the way are joined; the context is released regardless. A
// second Close fails with ErrClosed.
func (c *Context) Close() error {
	if c != nil && c.shared {
		return invalid("Context.Close", "the Context of Shared stays open")
	}
	if err := c.lock("Context.Close"); err != nil {
		return err
	}
	defer c.mu.Unlock()
	var errs []error
	for s := range c.streams {
		errs = append(errs, sysStreamSynchronize(c.h, s.h))
	}
	for e := range c.events {
		errs = append(errs, sysEventDestroy(c.h, e.h))
	}
	for s := range c.streams {
		errs = append(errs, sysStreamDestroy(c.h, s.h))
	}
	for m := range c.modules {
		errs = append(errs, sysModuleUnload(c.h, m.h))
	}
	for m := range c.mems {
		errs = append(errs, m.free())
	}
	for h := range c.hosts {
		errs = append(errs, sysMemFreeHost(c.h, h.p))
	}
	errs = append(errs, sysPrimaryCtxRelease(c.dev.handle))
	c.h = nil
	clear(c.events)
	clear(c.streams)
	clear(c.mems)
	clear(c.hosts)
	clear(c.modules)
	c.kernels = nil
	return errors.Join(errs...)
}
