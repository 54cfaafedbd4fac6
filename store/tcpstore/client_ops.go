package tcpstore

import (
	"context"
	"fmt"
)

// Get waits for key with WAIT, then reads it with GET, as PyTorch's
// clients do.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	return callFor(c, ctx, "get", []string{key}, func(cc *clientConn) ([]byte, error) {
		if err := cc.wait([]string{key}); err != nil {
			return nil, err
		}
		cc.query(opGet)
		cc.enc.str(key)
		return exchange(cc, (*decoder).value)
	})
}

// callFor is Client.call for an exchange that returns a reply.
func callFor[T any](c *Client, ctx context.Context, op string, keys []string, exchange func(*clientConn) (T, error)) (T, error) {
	var v T
	err := c.call(ctx, op, keys, func(cc *clientConn) (err error) {
		v, err = exchange(cc)
		return err
	})
	return v, err
}

// exchange sends the request encoded so far and reads its reply.
func exchange[T any](cc *clientConn, read func(*decoder) (T, error)) (T, error) {
	if err := cc.send(); err != nil {
		var zero T
		return zero, err
	}
	return read(&cc.dec)
}

// Set sends SET, which has no reply: a server that rejects it closes the
// connection, and the next call on that connection fails.
func (c *Client) Set(ctx context.Context, key string, value []byte) error {
	return c.call(ctx, "set", []string{key}, func(cc *clientConn) error {
		cc.query(opSet)
		cc.enc.str(key)
		cc.enc.bytes(value)
		return cc.send()
	})
}

func (c *Client) Add(ctx context.Context, key string, delta int64) (int64, error) {
	return callFor(c, ctx, "add", []string{key}, func(cc *clientConn) (int64, error) {
		cc.query(opAdd)
		cc.enc.str(key)
		cc.enc.i64(delta)
		return exchange(cc, (*decoder).i64)
	})
}

func (c *Client) CompareSet(ctx context.Context, key string, expected, desired []byte) ([]byte, error) {
	return callFor(c, ctx, "compare-set", []string{key}, func(cc *clientConn) ([]byte, error) {
		return cc.compareSet(key, expected, desired)
	})
}

func (cc *clientConn) compareSet(key string, expected, desired []byte) ([]byte, error) {
	cc.query(opCompareSet)
	cc.enc.str(key)
	cc.enc.bytes(expected)
	cc.enc.bytes(desired)
	return exchange(cc, (*decoder).value)
}

func (c *Client) Delete(ctx context.Context, key string) (bool, error) {
	erased, err := callFor(c, ctx, "delete", []string{key}, func(cc *clientConn) (int64, error) {
		cc.query(opDeleteKey)
		cc.enc.str(key)
		return exchange(cc, (*decoder).i64)
	})
	return erased == 1, err
}

func (c *Client) Check(ctx context.Context, keys ...string) (bool, error) {
	answer, err := callFor(c, ctx, "check", keys, func(cc *clientConn) (byte, error) {
		cc.query(opCheck)
		cc.enc.keys(keys)
		answer, err := exchange(cc, (*decoder).u8)
		if err == nil && answer != ready && answer != notReady {
			err = fmt.Errorf("CHECK replied %#x", answer)
		}
		return answer, err
	})
	return answer == ready && err == nil, err
}

func (c *Client) Wait(ctx context.Context, keys ...string) error {
	return c.call(ctx, "wait", keys, func(cc *clientConn) error { return cc.wait(keys) })
}

func (c *Client) NumKeys(ctx context.Context) (int64, error) {
	return callFor(c, ctx, "num-keys", nil, func(cc *clientConn) (int64, error) {
		cc.query(opNumKeys)
		return exchange(cc, (*decoder).i64)
	})
}

// Append sends APPEND, which has no reply, in 2.x; in 1.x it is emulated
// with COMPARE_SET (see appendV1).
func (c *Client) Append(ctx context.Context, key string, value []byte) error {
	return c.call(ctx, "append", []string{key}, func(cc *clientConn) error {
		if c.proto.version == Version1 {
			return c.appendV1(ctx, cc, key, value)
		}
		cc.query(opAppend)
		cc.enc.str(key)
		cc.enc.bytes(value)
		return cc.send()
	})
}

// MultiGet waits for all keys with WAIT, then reads them with MULTI_GET in
// 2.x, or with one GET each, sent together, in 1.x.
func (c *Client) MultiGet(ctx context.Context, keys ...string) ([][]byte, error) {
	return callFor(c, ctx, "multi-get", keys, func(cc *clientConn) ([][]byte, error) {
		if err := cc.wait(keys); err != nil {
			return nil, err
		}
		if c.proto.version == Version1 {
			for _, k := range keys {
				cc.query(opGet)
				cc.enc.str(k)
			}
		} else {
			cc.query(opMultiGet)
			cc.enc.keys(keys)
		}
		if err := cc.send(); err != nil {
			return nil, err
		}
		values := make([][]byte, len(keys))
		for i := range values {
			v, err := cc.dec.value()
			if err != nil {
				return nil, err
			}
			values[i] = v
		}
		return values, nil
	})
}

// MultiSet sends MULTI_SET in 2.x, which the server applies as one step,
// and one SET per key, sent together, in 1.x, where another client may see
// some keys set before the others.
func (c *Client) MultiSet(ctx context.Context, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("tcpstore: multi-set: %d keys but %d values", len(keys), len(values))
	}
	return c.call(ctx, "multi-set", keys, func(cc *clientConn) error {
		if c.proto.version == Version2 {
			cc.query(opMultiSet)
			cc.enc.i64(int64(len(keys)))
		}
		for i, k := range keys {
			if c.proto.version == Version1 {
				cc.query(opSet)
			}
			cc.enc.str(k)
			cc.enc.bytes(values[i])
		}
		return cc.send()
	})
}
