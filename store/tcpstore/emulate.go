package tcpstore

import (
	"bytes"
	"context"
	"crypto/rand"
)

// newSentinel returns a value no key holds in practice: 1.x's COMPARE_SET
// with it as both expected and desired reads a key without waiting and
// without changing it (see peek).
func newSentinel() []byte {
	return append([]byte("\x00tcpstore-sentinel:"), rand.Text()...)
}

// peek reads key without waiting, which 1.x's GET cannot do (it closes the
// connection on a missing key): a COMPARE_SET that expects and desires the
// sentinel returns the value of a present key untouched, and the sentinel
// itself for a missing one, storing nothing.
func (c *Client) peek(cc *clientConn, key string) (v []byte, present bool, err error) {
	v, err = cc.compareSet(key, c.sentinel, c.sentinel)
	if err != nil || bytes.Equal(v, c.sentinel) {
		return nil, false, err
	}
	return v, true, nil
}

// appendV1 emulates APPEND, which 1.x lacks, with a COMPARE_SET loop:
// expect the value last seen, desire it with data appended, and retry with
// what the server returns until the reply is the desired value.
//
// A reply equal to the desired value is taken as success, which is wrong
// only if a concurrent writer stored that very value meanwhile (two
// concurrent Appends of the same data onto the same value): then one of
// them is lost. The protocol offers no way to tell the cases apart.
func (c *Client) appendV1(ctx context.Context, cc *clientConn, key string, data []byte) error {
	if len(data) == 0 {
		// Create the key if it is missing; otherwise there is nothing to do.
		_, err := cc.compareSet(key, nil, nil)
		return err
	}
	cur, _, err := c.peek(cc, key)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		desired := append(cur[:len(cur):len(cur)], data...)
		got, err := cc.compareSet(key, cur, desired)
		switch {
		case err != nil:
			return err
		case bytes.Equal(got, desired):
			return nil
		case len(cur) > 0 && bytes.Equal(got, cur):
			// Only a missing key answers with the expected value: it was
			// deleted meanwhile, so start from nothing.
			cur = nil
		default:
			cur = got
		}
	}
	return ctx.Err()
}
