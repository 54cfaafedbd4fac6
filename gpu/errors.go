package gpu

import "errors"

var (
	// ErrUnavailable reports that no GPU can be used here: the binary was
	// built without cgo, the system is not Linux, NVML cannot be loaded
	// (ErrNoLibrary) or started, or it lists no device (ErrNoDevice).
	ErrUnavailable = errors.New("gpu: no NVIDIA GPU available")
	// ErrNoLibrary reports that libnvidia-ml.so.1 cannot be loaded. It
	// wraps ErrUnavailable.
	ErrNoLibrary error = &sentinel{"gpu: NVML not found (libnvidia-ml.so.1; the NVIDIA driver provides it)", ErrUnavailable}
	// ErrNoDevice reports that NVML started but lists no GPU. It wraps
	// ErrUnavailable.
	ErrNoDevice error = &sentinel{"gpu: NVML lists no GPU", ErrUnavailable}
)

// sentinel is an error that is itself matched by errors.Is and wraps a
// broader one.
type sentinel struct {
	msg    string
	parent error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.parent }

// detail is an error with its own text that matches a sentinel.
type detail struct {
	msg  string
	kind error
}

func (e *detail) Error() string { return e.msg }
func (e *detail) Unwrap() error { return e.kind }
