package backend

import (
	"context"

	"github.com/gocomms/gocomms/actors/window"
)

// The vocabulary of one-sided operations, as the native engine's window
// actor speaks it; every backend's windows take the same.
type (
	// WindowOp is one validated operation of this rank on Peer's window.
	// Data is the caller's: a backend copies what it keeps before Issue
	// returns.
	WindowOp = window.Op
	// WindowCode names a window operation.
	WindowCode = window.Code
	// SignalOp says how a signal changes its slot.
	SignalOp = window.SignalOp
	// SignalCmp compares a signal slot with a value.
	SignalCmp = window.Cmp
)

// The window operations.
const (
	WindowPut            = window.Put
	WindowGet            = window.Get
	WindowAccumulate     = window.Accumulate
	WindowGetAccumulate  = window.GetAccumulate
	WindowFetchAndOp     = window.FetchAndOp
	WindowCompareAndSwap = window.CompareAndSwap
	WindowSignal         = window.Signal
	WindowFlush          = window.Flush
	WindowLock           = window.Lock
	WindowUnlock         = window.Unlock
)

// The signal operations and comparisons.
const (
	SignalSet = window.SignalSet
	SignalAdd = window.SignalAdd
	SignalEQ  = window.CmpEQ
	SignalNE  = window.CmpNE
	SignalLT  = window.CmpLT
	SignalLE  = window.CmpLE
	SignalGT  = window.CmpGT
	SignalGE  = window.CmpGE
)

// ErrWindowClosed fails the operations of a closed window.
var ErrWindowClosed = window.ErrClosed

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
