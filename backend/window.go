package backend

import (
	"context"
	"errors"
	"time"

	"github.com/gocomms/gocomms/internal/names"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// The vocabulary of one-sided operations, which every backend's windows
// take; the native engine's window actor speaks it on the wire too.

// WindowOp is one of this rank's operations on Peer's window. The caller
// has checked it against the window's size, which is every rank's. Data
// is the backend's from then on: a backend copies what it keeps before
// Issue returns, or owns it.
type WindowOp struct {
	Code   WindowCode
	Peer   int
	Offset uint64 // bytes into the window
	Len    uint64 // bytes the operation covers in the window
	// Data is what a put or an accumulate writes, the operand of a fetch,
	// or the value and then the compared one of a swap, as Stage lays it
	// out (package actors/window); nil for the rest.
	Data   []byte
	Result []byte // where what a get or a fetch reads back goes: Len bytes
	DType  tensor.DType
	Reduce reduce.Kind
	// A put or a signal may change a signal slot of the target: Signal
	// with Slot and Value.
	Signal SignalOp
	Slot   int
	Value  uint64
	// Timeout bounds the wait for a reply; zero waits as long as the
	// window lives.
	Timeout time.Duration
	// Done is called once when the operation has ended, with Result
	// filled for one that reads back. (The native engine's window actor
	// calls it for one that reads nothing back once its frames are on
	// their way, or the peer's link has large data all.)
	Done func(error)
}

// WindowCode names a window operation; the native engine's frames carry
// it in their Tag.
type WindowCode uint32

// The window operations.
const (
	WindowPut WindowCode = iota + 1
	WindowGet
	WindowAccumulate
	WindowGetAccumulate
	WindowFetchAndOp
	WindowCompareAndSwap
	WindowSignal // a signal alone; a put carries one with it when its SignalOp is set
	WindowFlush
	WindowLock   // Value 1: exclusive, 0: shared; the reply grants it
	WindowUnlock // the reply says the lock is released, and the operations before applied
	numWindowCodes
)

var windowCodeNames = [numWindowCodes]string{
	WindowPut: "put", WindowGet: "get", WindowAccumulate: "accumulate", WindowGetAccumulate: "get_accumulate",
	WindowFetchAndOp: "fetch_and_op", WindowCompareAndSwap: "compare_and_swap", WindowSignal: "signal",
	WindowFlush: "flush", WindowLock: "lock", WindowUnlock: "unlock",
}

func (c WindowCode) String() string { return names.Of(c, "code", windowCodeNames[:]) }

// SignalOp says how a signal changes its slot.
type SignalOp uint8

// The signal operations.
const (
	SignalNone SignalOp = iota
	SignalSet
	SignalAdd
)

func (o SignalOp) String() string {
	return names.Of(o, "signal_op", []string{SignalNone: "none", SignalSet: "set", SignalAdd: "add"})
}

// SignalCmp compares a signal slot with a value. The ordered comparisons
// are rolling, as NCCL's: a slot that wrapped past 2^64 still compares
// greater than the values it passed, within half the range.
type SignalCmp uint8

// The comparisons.
const (
	SignalEQ SignalCmp = iota + 1
	SignalNE
	SignalLT
	SignalLE
	SignalGT
	SignalGE
)

func (c SignalCmp) String() string {
	return names.Of(c, "cmp", []string{SignalEQ: "==", SignalNE: "!=", SignalLT: "<", SignalLE: "<=",
		SignalGT: ">", SignalGE: ">="})
}

// Valid reports whether c is one of the comparisons.
func (c SignalCmp) Valid() bool { return c >= SignalEQ && c <= SignalGE }

// ErrWindowClosed fails the operations still waiting when their window
// closes, and every operation on a closed window.
var ErrWindowClosed = errors.New("gocomms: window closed")

// Windows is a Backend with one-sided RMA windows.
type Windows interface {
	// OpenWindow makes this rank's part of a window, collectively: every
	// rank calls it, in the same order, with the same ID, size and slots.
	// exchange all-gathers one byte string per rank over the communicator,
	// for the backend's own rendezvous. It does not block: done is called
	// once, with the window or why there is none.
	OpenWindow(cfg WindowConfig, exchange AsyncExchange, done func(Window, error))
}

// WindowConfig describes this rank's part of a window.
type WindowConfig struct {
	ID     uint64 // the window's number among its communicator's, the same on every rank
	Size   int    // bytes, the same on every rank
	Slots  int    // signal slots
	Memory []byte // the caller's memory, Size bytes; nil: the backend allocates it, zeroed
	// Carry, when set, is the window whose memory this one takes over
	// (Window.Shrink), closed with keepMemory; Memory is then nil.
	Carry Window
}

// Window is a backend's part of a window on this rank.
type Window interface {
	// Memory returns this rank's window memory.
	Memory() []byte
	// Mapped returns rank's window memory where this process addresses
	// it, else nil.
	Mapped(rank int) []byte
	// Direct is Mapped for the ranks whose windows the caller is to put
	// to, get from and update atomically itself, bypassing the backend;
	// nil for the others.
	Direct(rank int) []byte
	// Issue starts op, which the caller has checked against the window;
	// op.Done is called once when it ends.
	Issue(op *WindowOp)
	// Wait calls done once signal slot of this rank's window compares
	// with value as cmp says (with consume: once a signal no earlier
	// consuming wait took has come), with the slot's value then. It does
	// not block; cancel ends a wait not yet satisfied with err.
	Wait(slot int, cmp SignalCmp, value uint64, consume bool, done func(uint64, error)) (cancel func(error))
	// Read returns a signal slot of this rank's window in order with the
	// signals that reach it; with reset it zeroes it in the same step.
	Read(ctx context.Context, slot int, reset bool) (uint64, error)
	// Revoked returns why a failure revoked the window, or nil.
	Revoked() error
	// Close releases the window on this rank, and its memory unless
	// keepMemory: a window made with Carry is to take it over.
	Close(keepMemory bool)
}
