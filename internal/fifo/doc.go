// Package fifo owns the engine's one first-in, first-out queue: a ring
// that doubles when full, for the queues that may stay non-empty for
// ever (mailboxes, a rank's waiting operations, a connection's frames
// waiting for their handler), which a slice read from a moving head would
// let grow without bound.
package fifo
