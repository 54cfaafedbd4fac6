package tcpstore

import (
	"errors"
	"fmt"
)

var (
	errUnknownQuery = errors.New("unknown query")
	errWatchKey     = errors.New("WATCH_KEY is not supported")
)

// handle reads the fields of one request of kind o, runs it and replies.
// An error closes the connection, as it does with PyTorch's servers.
func (c *serverConn) handle(o op) error {
	st, d := c.st, &c.dec
	switch o {
	case opValidate:
		magic, err := d.u32()
		if err != nil {
			return err
		}
		if magic != validateMagic {
			return fmt.Errorf("bad magic %#x", magic)
		}
		return nil

	case opPing:
		nonce, err := d.u32()
		if err != nil {
			return err
		}
		return c.reply(func(e encoder) { e.u32(nonce) })

	case opSet:
		key, value, err := c.keyValue()
		if err != nil {
			return err
		}
		return st.set(key, value)

	case opAppend:
		key, value, err := c.keyValue()
		if err != nil {
			return err
		}
		return st.append(key, value)

	case opQueuePush:
		key, value, err := c.keyValue()
		if err != nil {
			return err
		}
		return st.queuePush(key, value)

	case opGet:
		key, err := d.key()
		if err != nil {
			return err
		}
		v, err := st.get(key)
		if err != nil {
			return err
		}
		return c.reply(func(e encoder) { e.bytes(v) })

	case opAdd:
		key, err := d.key()
		if err != nil {
			return err
		}
		delta, err := d.i64()
		if err != nil {
			return err
		}
		n, err := st.add(key, delta)
		if err != nil {
			return err
		}
		return c.reply(func(e encoder) { e.i64(n) })

	case opCompareSet:
		key, err := d.key()
		if err != nil {
			return err
		}
		expected, err := d.value()
		if err != nil {
			return err
		}
		desired, err := d.value()
		if err != nil {
			return err
		}
		v, err := st.compareSet(key, expected, desired)
		if err != nil {
			return err
		}
		return c.reply(func(e encoder) { e.bytes(v) })

	case opCheck:
		keys, err := d.keys()
		if err != nil {
			return err
		}
		ok, err := st.check(keys)
		if err != nil {
			return err
		}
		answer := notReady
		if ok {
			answer = ready
		}
		return c.reply(func(e encoder) { e.u8(answer) })

	case opWait:
		keys, err := d.keys()
		if err != nil {
			return err
		}
		return c.replyIfNow(st.wait(c, keys))

	case opBarrier:
		key, err := d.key()
		if err != nil {
			return err
		}
		worldSize, err := d.i64()
		if err != nil {
			return err
		}
		return c.replyIfNow(st.barrier(c, key, worldSize))

	case opCancelWait:
		st.cancel(c)
		return c.reply(func(e encoder) { e.u8(waitCanceled) })

	case opNumKeys:
		n, err := st.numKeys()
		if err != nil {
			return err
		}
		return c.reply(func(e encoder) { e.i64(n) })

	case opDeleteKey:
		key, err := d.key()
		if err != nil {
			return err
		}
		ok, err := st.deleteKey(key)
		if err != nil {
			return err
		}
		var erased int64
		if ok {
			erased = 1
		}
		return c.reply(func(e encoder) { e.i64(erased) })

	case opMultiGet:
		keys, err := d.keys()
		if err != nil {
			return err
		}
		values, err := st.multiGet(keys)
		if err != nil {
			return err
		}
		return c.reply(func(e encoder) {
			for _, v := range values {
				e.bytes(v)
			}
		})

	case opMultiSet:
		n, err := d.count()
		if err != nil {
			return err
		}
		keys, values := make([]string, 0, min(n, 1024)), make([][]byte, 0, min(n, 1024))
		for range n {
			key, value, err := c.keyValue()
			if err != nil {
				return err
			}
			keys, values = append(keys, key), append(values, value)
		}
		return st.multiSet(keys, values)

	case opQueuePop, opQueueLen:
		key, err := d.key()
		if err != nil {
			return err
		}
		if o == opQueueLen {
			n := st.queueLen(key)
			return c.reply(func(e encoder) { e.i64(n) })
		}
		n, head := st.queuePop(key)
		return c.reply(func(e encoder) {
			e.i64(n)
			if n > 0 {
				e.bytes(head)
			}
		})

	case opListKeys:
		keys, err := st.listKeys()
		if err != nil {
			return err
		}
		return c.reply(func(e encoder) {
			e.i64(int64(len(keys)))
			for _, k := range keys {
				e.str(k)
			}
		})

	case opWatchKey:
		return errWatchKey
	}
	return errUnknownQuery
}

// keyValue reads the fields of SET, APPEND and QUEUE_PUSH.
func (c *serverConn) keyValue() (string, []byte, error) {
	key, err := c.dec.key()
	if err != nil {
		return "", nil, err
	}
	value, err := c.dec.value()
	return key, value, err
}

// replyIfNow answers a WAIT or BARRIER that need not wait; one that must is
// answered by the write that releases it.
func (c *serverConn) replyIfNow(now bool, err error) error {
	if err != nil || !now {
		return err
	}
	return c.reply(func(e encoder) { e.u8(stopWaiting) })
}
