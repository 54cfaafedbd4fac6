// Package cuda is a thin, safe layer over the CUDA driver API calls that
// moving collective data through GPU memory needs: devices, their primary
// contexts, device and pinned host memory, copies between them, streams,
// events, the kernels that reduce on the device, and the sharing of
// memory and events with other processes on the host (CUDA IPC).
//
// libcuda is loaded at run time (dlopen), as go-nvml loads NVML, so the
// package builds on every machine, with or without cgo, and links no CUDA
// library (only libdl) and needs no CUDA header. Where CUDA cannot be
// used, calls fail with an error that matches ErrUnavailable and says
// why: built without cgo or off Linux, ErrNoLibrary (libcuda.so.1, which
// the NVIDIA driver installs, will not load), ErrNoDevice (it loads but
// finds no GPU). A caller that can do without GPUs checks for
// ErrUnavailable and keeps its data in host memory.
//
// Start reading at Open in cuda.go; sys_cgo.go is the only file that
// calls C, through the functions in gcu.h. The objects and their order
// (errors left out):
//
//	drv  := cuda.Open()                   libcuda, loaded and initialized once
//	devs := drv.Devices()                 Name, PCIBusID, TotalMem, ComputeCapability
//	ctx  := devs[0].PrimaryContext()      owns everything below
//	mem  := ctx.Alloc(n)                  device memory
//	ctx.CopyHtoD(mem, off, buf)           synchronous, from and to Go memory
//	ctx.CopyDtoH(buf, mem, off)
//	ctx.CopyDtoD(dst, dstOff, mem, off, n) / ctx.Memset(mem, off, n, b)
//	pin  := ctx.AllocHost(n)              pinned host memory: pin.Bytes()
//	s    := ctx.NewStream()
//	s.CopyHtoD(mem, off, pin.Bytes())     queued; only pinned memory
//	s.CopyDtoH / s.CopyDtoD
//	ev   := ctx.NewEvent()
//	ev.Record(s)                          a point in s's work
//	other.Wait(ev)                        another stream waits for it
//	ev.Synchronize() / ev.Query() / ev.Elapsed(start)
//	s.Synchronize() / s.Query()
//	s.Combine(op, dtype, dst, a, b …)     reduce.Combine on the device, queued
//	s.Finish(op, dtype, buf, …)           reduce.Finish on the device, queued
//	mod  := ctx.LoadModule(ptx)           PTX, compiled by the driver's JIT
//	mod.Function(name)
//	h    := mem.IPCHandle()               to another process on this host (MarshalBinary)
//	peer := ctx.OpenIPC(h)                there: its memory, as DeviceMemory
//	iev  := ctx.NewIPCEvent() / ctx.OpenIPCEvent(iev.IPCHandle())
//	s.WriteValue64(peer, off, v)          a flag in device memory, in stream order
//	s.WaitValue64(mem, off, v, WaitGEQ)   s waits for it, whichever process writes it
//	ctx.Close()                           frees whatever is left, releases the context
//
// # Current context
//
// The driver runs most calls in the context current on the calling OS
// thread, and goroutines move between threads. Each call here passes its
// context to C, which makes it current (cuCtxSetCurrent) and makes the
// driver call within one cgo call, on one thread: callers need no
// runtime.LockOSThread, and no call depends on what the thread ran
// before. The context stays current on that thread afterwards.
//
// # Ordering
//
// Streams are created with CU_STREAM_DEFAULT, so they synchronize with
// the legacy default stream, on which the Context's own copies and
// Memset run: a synchronous copy comes after the work queued earlier on
// every stream of the context, and work queued later on a stream comes
// after it. CopyHtoD and CopyDtoH return once done; CopyDtoD and Memset
// may return before the device has finished, which what follows cannot
// tell.
//
// # Memory
//
// C keeps no Go memory beyond a call. The synchronous copies read or
// write Go memory during the call only. A stream's copies run later, so
// they take only pinned memory that the driver allocated (HostMemory),
// never Go memory; they check that the slice lies in it. Such a slice is
// C memory: it must not be used after the HostMemory's Close. The caller
// must not change memory that queued work still reads, nor read what it
// still writes, nor free either, until an event, Synchronize or Query
// says that work is done.
//
// # Concurrency and errors
//
// Every method is safe for concurrent use. Every method of a nil or zero
// object, or given an object of another context, returns an error
// matching ErrInvalid; every method of a closed object, Close included,
// returns one matching ErrClosed; neither reaches the driver. A driver
// call that fails returns an *Error, which matches its Result:
// errors.Is(err, cuda.ResultOutOfMemory). Nothing panics.
//
// # Kernels
//
// Stream.Combine and Stream.Finish run the kernels of kernels/reduce.cu,
// one per operator and dtype, with the semantics of package reduce; the
// package embeds them as PTX (kernels/reduce.ptx, which go generate
// writes with nvcc) and loads them into a context on its first reduction,
// where the driver compiles them for its GPU. They launch nothing else:
// a Module loaded by the caller gives its functions' handles only.
//
// This package must not choose where data lives, start goroutines, log,
// or retry.
package cuda
