package window

import "github.com/gocomms/gocomms/backend"

// The actor speaks the backend contract's vocabulary of one-sided
// operations (package backend), under the short names of its own
// package.
type (
	Op       = backend.WindowOp
	Code     = backend.WindowCode
	SignalOp = backend.SignalOp
	Cmp      = backend.SignalCmp
)

const (
	Put            = backend.WindowPut
	Get            = backend.WindowGet
	Accumulate     = backend.WindowAccumulate
	GetAccumulate  = backend.WindowGetAccumulate
	FetchAndOp     = backend.WindowFetchAndOp
	CompareAndSwap = backend.WindowCompareAndSwap
	Signal         = backend.WindowSignal
	Flush          = backend.WindowFlush
	Lock           = backend.WindowLock
	Unlock         = backend.WindowUnlock

	SignalNone = backend.SignalNone
	SignalSet  = backend.SignalSet
	SignalAdd  = backend.SignalAdd

	CmpEQ = backend.SignalEQ
	CmpNE = backend.SignalNE
	CmpLT = backend.SignalLT
	CmpLE = backend.SignalLE
	CmpGT = backend.SignalGT
	CmpGE = backend.SignalGE
)

// ErrClosed fails the operations still waiting when their window closes,
// and every operation on a closed window.
var ErrClosed = backend.ErrWindowClosed
