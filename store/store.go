package store

import (
	"context"
	"errors"
	"fmt"
)

// Store is the rendezvous key-value store, with the semantics of PyTorch's
// c10d Store. Keys are opaque non-empty strings and values opaque bytes.
// Values passed in may be reused by the caller once a call returns, and
// values returned are the caller's to modify.
//
// ctx bounds the calls that wait for keys (Get, Wait, MultiGet); a store
// that talks to a server also uses it to bound the round trip.
type Store interface {
	// Set creates or overwrites key and wakes those waiting for it.
	Set(ctx context.Context, key string, value []byte) error
	// Get waits until key exists and returns its value. If ctx ends first,
	// the error names the key and wraps ctx.Err().
	Get(ctx context.Context, key string) ([]byte, error)
	// Add atomically adds delta to the counter at key and returns the new
	// value. Counters are stored as decimal ASCII, as PyTorch stores them,
	// so Get returns "5"; a missing key counts as 0, and a value that is
	// not a number is an error that leaves it unchanged. Add(ctx, key, 0)
	// reads a counter.
	Add(ctx context.Context, key string, delta int64) (int64, error)
	// CompareSet sets key to desired if it is missing and expected is
	// empty, or if it holds exactly expected. It returns the value now
	// stored, except that, as in PyTorch, a missing key with a non-empty
	// expected is left missing and expected is returned. The caller won
	// exactly when the result equals desired.
	CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error)
	// Delete removes key and reports whether it existed.
	Delete(ctx context.Context, key string) (bool, error)
	// Check reports whether all keys exist, without waiting.
	Check(ctx context.Context, keys ...string) (bool, error)
	// Wait waits until all keys exist.
	Wait(ctx context.Context, keys ...string) error
	// NumKeys counts every key in the store.
	NumKeys(ctx context.Context) (int64, error)
	// Append appends value to key, creating it if missing.
	Append(ctx context.Context, key string, value []byte) error
	// MultiGet waits until all keys exist and returns their values in order.
	MultiGet(ctx context.Context, keys ...string) ([][]byte, error)
	// MultiSet sets keys[i] to values[i] for every i, as one step.
	MultiSet(ctx context.Context, keys []string, values [][]byte) error
	// Close releases the store. Later calls fail with ErrClosed, and calls
	// blocked waiting for keys return ErrClosed.
	Close() error
}

var (
	// ErrClosed reports use of a closed store.
	ErrClosed = errors.New("store: closed")
	// ErrEmptyKey reports an empty key, which no store accepts.
	ErrEmptyKey = errors.New("store: empty key")
)

// checkKeys rejects empty keys before anything is stored or waited for.
func checkKeys(op string, keys ...string) error {
	for _, k := range keys {
		if k == "" {
			return fmt.Errorf("store: %s: %w", op, ErrEmptyKey)
		}
	}
	return nil
}

// clone returns a copy of b that is never nil, so that an existing empty
// value reads differently from no value at all.
func clone(b []byte) []byte {
	return append([]byte{}, b...)
}
