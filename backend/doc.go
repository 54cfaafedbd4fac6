// Package backend is the contract between a communicator and the engine
// that runs it, as database/sql/driver is between sql and its drivers.
// The root package validates, numbers and hooks operations, and hands
// each to a Backend as a validated Op with a Completion to report
// through; a backend only executes.
//
// What a backend must do is Backend: Issue, Split, Abort, Finalize. What
// it may do besides is a small interface each, which the front asks for
// with a type assertion and never with a concrete type:
//
//	Canceler        cancel an operation by its sequence number
//	Pooled          issue into state kept from an earlier operation (a
//	                Room), so that steady blocking calls allocate nothing
//	FaultTolerant   agree among survivors, revoke (ULFM)
//	Reconfigurable  form new communicators from init handles
//	Windows         one-sided RMA windows
//
// The package holds types and nothing that runs: it must not import an
// engine, a transport or a store implementation. The native engine is
// package engine; the root package registers it as "native".
package backend
