package cuda

import (
	_ "embed"
	"errors"
	"math"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

//go:generate sh kernels/gen.sh

// reducePTX holds the reduction kernels of kernels/reduce.cu, compiled by
// kernels/gen.sh for a virtual architecture that the driver JIT-compiles
// for the GPU at hand.
//
//go:embed kernels/reduce.ptx
var reducePTX []byte

// dtypeSuffix names each dtype in the kernels' names.
var dtypeSuffix = map[tensor.DType]string{
	tensor.Bool: "bool",
	tensor.Int8: "i8", tensor.Int16: "i16", tensor.Int32: "i32", tensor.Int64: "i64",
	tensor.Uint8: "u8", tensor.Uint16: "u16", tensor.Uint32: "u32", tensor.Uint64: "u64",
	tensor.Float16: "f16", tensor.BFloat16: "bf16", tensor.Float32: "f32", tensor.Float64: "f64",
}

// combineKernel names the kernel that combines dt with op's kind; Avg
// and PreMulSum combine as Sum.
func combineKernel(k reduce.Kind, dt tensor.DType) string {
	if k == reduce.Avg || k == reduce.PreMulSum {
		k = reduce.Sum
	}
	return "gc_" + k.String() + "_" + dtypeSuffix[dt]
}

// finishKernel names the kernel that finishes Avg or PreMulSum on dt.
func finishKernel(k reduce.Kind, dt tensor.DType) string {
	return "gc_" + k.String() + "_" + dtypeSuffix[dt]
}

// kernelNames lists every kernel that reduce.cu defines: one combining
// kernel for each kind and dtype that reduce supports, one finishing
// kernel for each dtype that Avg and PreMulSum support, and one fold for
// each kind and dtype.
func kernelNames() []string {
	var names []string
	for _, dt := range tensor.DTypes() {
		for _, k := range reduce.Kinds() {
			op := reduce.New(k)
			if k == reduce.PreMulSum {
				op = reduce.PreMul(1)
			}
			if op.Supports(dt) != nil {
				continue
			}
			switch k {
			case reduce.Avg, reduce.PreMulSum:
				names = append(names, finishKernel(k, dt))
			default:
				names = append(names, combineKernel(k, dt))
			}
			names = append(names, foldKernel(k, dt))
		}
	}
	return names
}

const (
	// blockSize is the threads per block: a multiple of the warp size
	// that every architecture runs several of per multiprocessor.
	blockSize = 256
	// maxBlocks caps the grid: the kernels loop over what a smaller grid
	// does not cover, and 4096 blocks of 256 threads keep the largest
	// GPUs full several times over.
	maxBlocks = 4096
)

func gridSize(count int) uint32 {
	return uint32(min((count+blockSize-1)/blockSize, maxBlocks))
}

// Combine queues dst = a ⊕ b over count elements of dt, ⊕ being op's
// combining function, with reduce.Combine's semantics: the same bits,
// but for the payloads of NaNs. dst, a and b are byte offsets into
// device memory of the stream's context, aligned to dt's size; dst may
// be a or b, or overlap neither. Avg and PreMulSum combine as Sum; Finish
// completes them.
//
// It returns once the kernel is queued; the first call on a context
// loads the reduction kernels into it (LoadModule), which the driver
// compiles then. Whatever the driver is not given (an op not defined
// for dt, a range outside its memory, misaligned or partly overlapping
// ranges) fails with ErrInvalid.
func (s *Stream) Combine(op reduce.Op, dt tensor.DType, dst *DeviceMemory, dstOff int,
	a *DeviceMemory, aOff int, b *DeviceMemory, bOff int, count int) error {
	const name = "Stream.Combine"
	return s.launch(name, func(c *Context) (kernelLaunch, error) {
		if err := checkReduce(name, op, dt, count); err != nil {
			return kernelLaunch{}, err
		}
		size := dt.Size()
		n := count * size
		to, err := c.elements(name, dst, dstOff, n, size)
		if err != nil {
			return kernelLaunch{}, err
		}
		x, err := c.elements(name, a, aOff, n, size)
		if err != nil {
			return kernelLaunch{}, err
		}
		y, err := c.elements(name, b, bOff, n, size)
		if err != nil {
			return kernelLaunch{}, err
		}
		if partlyOverlap(to, x, n) || partlyOverlap(to, y, n) {
			return kernelLaunch{}, invalid(name, "dst at %#x overlaps a at %#x or b at %#x without being it",
				to, x, y)
		}
		if count == 0 {
			return kernelLaunch{}, nil
		}
		return kernelLaunch{
			name:  combineKernel(op.Kind(), dt),
			count: count,
			args:  []uint64{to, x, y, uint64(count)},
		}, nil
	})
}

// Finish queues reduce.Finish of op on count elements of dt at byte
// offset off of buf, which hold the combination of contributions
// contributions: Avg divides by contributions, PreMulSum multiplies by
// op's factor (rounded to float32 but for float64), and every other op
// leaves them as they are. Like Combine, it returns once the kernel is
// queued and checks its arguments first.
func (s *Stream) Finish(op reduce.Op, dt tensor.DType, buf *DeviceMemory, off, count, contributions int) error {
	const name = "Stream.Finish"
	return s.launch(name, func(c *Context) (kernelLaunch, error) {
		if err := checkReduce(name, op, dt, count); err != nil {
			return kernelLaunch{}, err
		}
		if contributions < 1 {
			return kernelLaunch{}, invalid(name, "%d contributions", contributions)
		}
		p, err := c.elements(name, buf, off, count*dt.Size(), dt.Size())
		if err != nil {
			return kernelLaunch{}, err
		}
		k := op.Kind()
		if count == 0 || (k != reduce.Avg && k != reduce.PreMulSum) || (k == reduce.Avg && contributions == 1) {
			return kernelLaunch{}, nil
		}
		return kernelLaunch{
			name:  finishKernel(k, dt),
			count: count,
			args:  []uint64{p, uint64(count), finishScalar(op, dt, contributions)},
		}, nil
	})
}

// finishScalar is the parameter of the kernel that finishes op on dt
// over contributions: Avg's divisor, PreMulSum's factor, 0 for the rest.
func finishScalar(op reduce.Op, dt tensor.DType, contributions int) uint64 {
	var scalar uint64
	switch k := op.Kind(); {
	case k != reduce.Avg && k != reduce.PreMulSum:
	case k == reduce.PreMulSum && dt == tensor.Float64:
		scalar = math.Float64bits(op.Factor())
	case k == reduce.PreMulSum:
		put(&scalar, float32(op.Factor()))
	case dt == tensor.Float64:
		scalar = math.Float64bits(float64(contributions))
	case dt.IsFloat():
		put(&scalar, float32(contributions))
	default: // int64 or uint64, as the kernel's type for dt reads it
		scalar = uint64(contributions)
	}
	return scalar
}

// put stores f in the first bytes of slot, where a float parameter reads
// it whatever the byte order.
func put(slot *uint64, f float32) { *(*float32)(unsafe.Pointer(slot)) = f }

// checkReduce checks what Combine and Finish are given that needs no context.
func checkReduce(name string, op reduce.Op, dt tensor.DType, count int) error {
	if err := op.Supports(dt); err != nil {
		return errkind.Of(prefix+name+": "+err.Error(), ErrInvalid, nil)
	}
	if count < 0 || count > math.MaxInt/dt.Size() {
		return invalid(name, "%d elements of %v", count, dt)
	}
	return nil
}

// elements checks, c.mu held, that m holds n bytes at off, aligned to
// size, and returns their address.
func (c *Context) elements(name string, m *DeviceMemory, off, n, size int) (uint64, error) {
	p, err := c.deviceRange(name, m, off, n)
	if err != nil {
		return 0, err
	}
	if p%uint64(size) != 0 {
		return 0, invalid(name, "offset %d is not aligned to the %d-byte elements", off, size)
	}
	return p, nil
}

// partlyOverlap reports whether the n-byte ranges at p and q overlap
// without being the same: elements written through one would be read
// through the other by another thread.
func partlyOverlap(p, q uint64, n int) bool {
	return p != q && n > 0 && p < q+uint64(n) && q < p+uint64(n)
}

// kernelLaunch is one launch of a reduction kernel; a zero one launches
// nothing.
type kernelLaunch struct {
	name  string
	count int
	args  []uint64 // one 8-byte slot per parameter
}

// launch runs plan with the stream's context locked for reading and
// queues the launch it returns, loading the reduction kernels first
// where the context has none yet. Loading needs the lock for writing, so
// it drops the lock and plans again after, once: the kernels stay until
// the context's Close, after which the lock is not taken.
func (s *Stream) launch(name string, plan func(*Context) (kernelLaunch, error)) error {
	for {
		c, err := s.rlock(name)
		if err != nil {
			return err
		}
		l, err := plan(c)
		if err != nil || l.name == "" {
			c.mu.RUnlock()
			return err
		}
		if c.kernels != nil {
			f := c.kernels[l.name]
			err := sysLaunch(c.h, f.h, gridSize(l.count), blockSize, s.h, l.args)
			c.mu.RUnlock()
			return err
		}
		c.mu.RUnlock()
		if err := c.loadKernels(name); err != nil {
			return err
		}
	}
}

// loadKernels loads the reduction kernels into c unless it has them.
func (c *Context) loadKernels(name string) error {
	if err := c.lock(name); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if c.kernels != nil {
		return nil
	}
	m, err := c.loadModule(reducePTX)
	if err != nil {
		return errkind.Of(prefix+name+": loading the reduction kernels: "+why(err), err, nil)
	}
	fns := make(map[string]*Function)
	for _, k := range kernelNames() {
		f, err := m.function(k)
		if err != nil {
			delete(c.modules, m)
			return errors.Join(errkind.Of(prefix+name+": the reduction kernels lack "+k+": "+why(err), err, nil),
				sysModuleUnload(c.h, m.h))
		}
		fns[k] = f
	}
	c.kernels = fns
	return nil
}
