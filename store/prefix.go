package store

import (
	"context"
	"errors"
	"fmt"
)

// prefixed scopes a Store to the keys under one prefix, like PyTorch's
// PrefixStore.
type prefixed struct {
	s      Store
	prefix string // with the trailing "/"

	// closed is cancelled by Close. It is a context so that waits in the
	// underlying store can be cut short without a goroutine per call.
	closed   context.Context
	closeNow context.CancelFunc
}

// WithPrefix returns a view of s in which every key becomes
// prefix + "/" + key, as PyTorch's PrefixStore maps it; views nest, the
// outer prefix innermost ("a/b/key" for b over a). Keys under other
// prefixes are invisible, except to NumKeys, which passes through and
// counts every key of s, as in PyTorch.
//
// Closing the view makes its later calls fail with ErrClosed and releases
// its waiting calls, but does not close s.
func WithPrefix(s Store, prefix string) Store {
	closed, closeNow := context.WithCancel(context.Background())
	return &prefixed{s: s, prefix: prefix + "/", closed: closed, closeNow: closeNow}
}

func (p *prefixed) key(k string) string { return p.prefix + k }

func (p *prefixed) keys(ks []string) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = p.key(k)
	}
	return out
}

// check validates keys before prefixing hides an empty one, and refuses
// calls once p is closed.
func (p *prefixed) check(op string, keys ...string) error {
	if err := checkKeys(op, keys...); err != nil {
		return err
	}
	if p.closed.Err() != nil {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	return nil
}

// wait runs a waiting call of the underlying store under a context that
// Close also cancels, and reports that cancellation as ErrClosed.
func (p *prefixed) wait(ctx context.Context, op string, call func(context.Context) error) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(p.closed, func() { cancel(ErrClosed) })
	defer stop()
	err := call(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), ErrClosed) {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	return err
}

func (p *prefixed) Set(ctx context.Context, key string, value []byte) error {
	if err := p.check("set", key); err != nil {
		return err
	}
	return p.s.Set(ctx, p.key(key), value)
}

func (p *prefixed) Get(ctx context.Context, key string) ([]byte, error) {
	if err := p.check("get", key); err != nil {
		return nil, err
	}
	var v []byte
	err := p.wait(ctx, "get", func(ctx context.Context) (err error) {
		v, err = p.s.Get(ctx, p.key(key))
		return err
	})
	return v, err
}

func (p *prefixed) Add(ctx context.Context, key string, delta int64) (int64, error) {
	if err := p.check("add", key); err != nil {
		return 0, err
	}
	return p.s.Add(ctx, p.key(key), delta)
}

func (p *prefixed) CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error) {
	if err := p.check("compare-set", key); err != nil {
		return nil, err
	}
	return p.s.CompareSet(ctx, p.key(key), expected, desired)
}

func (p *prefixed) Delete(ctx context.Context, key string) (bool, error) {
	if err := p.check("delete", key); err != nil {
		return false, err
	}
	return p.s.Delete(ctx, p.key(key))
}

func (p *prefixed) Check(ctx context.Context, keys ...string) (bool, error) {
	if err := p.check("check", keys...); err != nil {
		return false, err
	}
	return p.s.Check(ctx, p.keys(keys)...)
}

func (p *prefixed) Wait(ctx context.Context, keys ...string) error {
	if err := p.check("wait", keys...); err != nil {
		return err
	}
	return p.wait(ctx, "wait", func(ctx context.Context) error {
		return p.s.Wait(ctx, p.keys(keys)...)
	})
}

func (p *prefixed) NumKeys(ctx context.Context) (int64, error) {
	if err := p.check("num-keys"); err != nil {
		return 0, err
	}
	return p.s.NumKeys(ctx)
}

func (p *prefixed) Append(ctx context.Context, key string, value []byte) error {
	if err := p.check("append", key); err != nil {
		return err
	}
	return p.s.Append(ctx, p.key(key), value)
}

func (p *prefixed) MultiGet(ctx context.Context, keys ...string) ([][]byte, error) {
	if err := p.check("multi-get", keys...); err != nil {
		return nil, err
	}
	var vs [][]byte
	err := p.wait(ctx, "multi-get", func(ctx context.Context) (err error) {
		vs, err = p.s.MultiGet(ctx, p.keys(keys)...)
		return err
	})
	return vs, err
}

func (p *prefixed) MultiSet(ctx context.Context, keys []string, values [][]byte) error {
	if err := p.check("multi-set", keys...); err != nil {
		return err
	}
	return p.s.MultiSet(ctx, p.keys(keys), values)
}

// Close closes the view only; the underlying store stays open.
func (p *prefixed) Close() error {
	p.closeNow()
	return nil
}
