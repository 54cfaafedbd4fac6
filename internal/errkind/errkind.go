package errkind

// Sentinel returns an error with text msg that errors.Is matches by
// identity and that wraps parent: ErrNoLibrary, say, under ErrUnavailable.
func Sentinel(msg string, parent error) error { return &sentinel{msg, parent} }

type sentinel struct {
	msg    string
	parent error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.parent }

// Of returns an error with text msg that matches kind and, if not nil,
// cause.
func Of(msg string, kind, cause error) error { return &detail{msg, kind, cause} }

type detail struct {
	msg         string
	kind, cause error
}

func (e *detail) Error() string { return e.msg }

func (e *detail) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}
