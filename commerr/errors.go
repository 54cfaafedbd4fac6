package commerr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinels, matched with errors.Is. An OpError wraps exactly one of them
// (or a cause that in turn wraps one).
var (
	// ErrInvalidArgument: bad input, rejected before any byte moved, or
	// arguments that other ranks showed to be mismatched.
	ErrInvalidArgument = errors.New("gocomms: invalid argument")
	// ErrTimeout: the operation did not complete within its timeout.
	ErrTimeout = errors.New("gocomms: timed out")
	// ErrAborted: the communicator was aborted, locally or by a peer.
	ErrAborted = errors.New("gocomms: aborted")
	// ErrPeerFailed: a peer's connection failed or the peer reported a failure.
	ErrPeerFailed = errors.New("gocomms: peer failed")
	// ErrPeerCanceled: a peer's caller cancelled the operation, so every
	// rank of it ends. It matches neither ErrInvalidArgument (no arguments
	// were wrong) nor ErrPeerFailed (the peer is healthy and the
	// communicator usable: retrying is sound, shrinking it away is not).
	ErrPeerCanceled = errors.New("gocomms: peer canceled")
	// ErrRevoked: the communicator was revoked by fault-tolerance agreement.
	ErrRevoked = errors.New("gocomms: revoked")
	// ErrFinalized: the communicator was finalized and takes no more work.
	ErrFinalized = errors.New("gocomms: communicator finalized")
	// ErrNotInitialized: a communicator created to be reconfigured has no
	// members until Reconfigure gives it some.
	ErrNotInitialized = errors.New("gocomms: communicator not initialized")
)

// OpError reports a failed operation, after net.OpError: the communicator,
// the operation and its sequence number on this rank, the ranks involved
// (those it was waiting for, or those that reported the failure) and the
// cause.
type OpError struct {
	Comm  string // communicator name
	Op    string // operation name, torchcomms style ("all_reduce")
	Seq   uint64 // sequence number of the operation on this communicator
	Rank  int    // the rank that reports the error
	Ranks []int  // ranks the failure concerns; may be empty
	Err   error  // the cause; wraps one of the sentinels
}

func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString("gocomms: comm ")
	b.WriteString(strconv.Quote(e.Comm))
	fmt.Fprintf(&b, " rank %d: %s #%d", e.Rank, e.Op, e.Seq)
	if len(e.Ranks) > 0 {
		b.WriteString(" (ranks ")
		for i, r := range e.Ranks {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(r))
		}
		b.WriteByte(')')
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "gocomms: "))
	return b.String()
}

func (e *OpError) Unwrap() error { return e.Err }

// Invalid returns an ErrInvalidArgument error with a formatted reason.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// Accusation is a peer's failure that this rank knows of only from another
// rank's word: Accuser's link to the failed peer failed. A rank that
// accuses healthy peers (its clock runs fast, say) is then the one to
// look at.
type Accusation struct {
	Accuser int
	Err     error
}

func (e *Accusation) Error() string {
	return fmt.Sprintf("%v (reported by rank %d)", e.Err, e.Accuser)
}

func (e *Accusation) Unwrap() error { return e.Err }
