package cuda

import "sync"

// shared holds the process's contexts that Shared hands out, by device
// ordinal.
var shared struct {
	mu   sync.Mutex
	ctxs map[int]*Context
}

// Shared returns the process's one Context for the device with the given
// ordinal, retaining its primary context on the first call and never
// releasing it. Objects of one Context cannot be used with another's, so
// the parts of a process that pass device memory and streams to each
// other (communicators, their callers, other backends) all use this one.
// Closing it is refused with ErrInvalid.
func Shared(ordinal int) (*Context, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if c := shared.ctxs[ordinal]; c != nil {
		return c, nil
	}
	drv, err := Open()
	if err != nil {
		return nil, err
	}
	devs, err := drv.Devices()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= len(devs) {
		return nil, invalid("Shared", "device %d of %d", ordinal, len(devs))
	}
	c, err := devs[ordinal].PrimaryContext()
	if err != nil {
		return nil, err
	}
	c.shared = true
	if shared.ctxs == nil {
		shared.ctxs = make(map[int]*Context)
	}
	shared.ctxs[ordinal] = c
	return c, nil
}
