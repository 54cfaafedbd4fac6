// Package commerr owns the errors every layer of gocomms returns: the
// sentinels that callers match with errors.Is and OpError, the one
// structured type that says which communicator, operation, sequence number
// and ranks a failure concerns.
//
// It is a leaf: the public package re-exports these names, and the actors
// below it build OpErrors without importing the public package. It must not
// grow behaviour beyond formatting and matching.
package commerr
