package tcpstore

import (
	"errors"
	"fmt"
)

var (
	errUnknownQuery = errors.New("unknown query")
	errWatchKey     = errors.New("WATCH_KEY is not supported")
)

// handlers answer each query kind: each reads the request's fields, runs it
// and replies. An error closes the connection, as it does with PyTorch's
// servers.
var handlers = [...]func(c *serverConn) error{
	opValidate:   (*serverConn).validate,
	opPing:       (*serverConn).ping,
	opSet:        keyValueHandler((*state).set),
	opAppend:     keyValueHandler((*state).append),
	opQueuePush:  keyValueHandler((*state).queuePush),
	opGet:        (*serverConn).get,
	opAdd:        (*serverConn).add,
	opCompareSet: (*serverConn).compareSet,
	opCheck:      (*serverConn).check,
	opWait:       (*serverConn).wait,
	opBarrier:    (*serverConn).barrier,
	opCancelWait: (*serverConn).cancelWait,
	opNumKeys:    (*serverConn).numKeys,
	opDeleteKey:  (*serverConn).deleteKey,
	opMultiGet:   (*serverConn).multiGet,
	opMultiSet:   (*serverConn).multiSet,
	opQueuePop:   (*serverConn).queuePop,
	opQueueLen:   (*serverConn).queueLen,
	opListKeys:   (*serverConn).listKeys,
	opWatchKey:   func(*serverConn) error { return errWatchKey },
}

// handle runs one request of kind o.
func (c *serverConn) handle(o op) error {
	if h := handlers[o]; h != nil {
		return h(c)
	}
	return errUnknownQuery
}

func (c *serverConn) validate() error {
	magic, err := c.dec.u32()
	if err != nil {
		return err
	}
	if magic != validateMagic {
		return fmt.Errorf("bad magic %#x", magic)
	}
	return nil
}

func (c *serverConn) ping() error {
	nonce, err := c.dec.u32()
	if err != nil {
		return err
	}
	return c.reply(func(e encoder) { e.u32(nonce) })
}

// keyValueHandler runs SET, APPEND or QUEUE_PUSH, which have no reply.
func keyValueHandler(run func(st *state, key string, value []byte) error) func(*serverConn) error {
	return func(c *serverConn) error {
		key, value, err := c.keyValue()
		if err != nil {
			return err
		}
		return run(c.st, key, value)
	}
}

// keyValue reads a key and a value: the fields of SET, APPEND and
// QUEUE_PUSH, and the first two of COMPARE_SET.
func (c *serverConn) keyValue() (string, []byte, error) {
	key, err := c.dec.key()
	if err != nil {
		return "", nil, err
	}
	value, err := c.dec.value()
	return key, value, err
}

func (c *serverConn) get() error {
	key, err := c.dec.key()
	if err != nil {
		return err
	}
	return c.replyValue(c.st.get(key))
}

func (c *serverConn) add() error {
	key, err := c.dec.key()
	if err != nil {
		return err
	}
	delta, err := c.dec.i64()
	if err != nil {
		return err
	}
	return c.replyInt(c.st.add(key, delta))
}

func (c *serverConn) compareSet() error {
	key, expected, err := c.keyValue()
	if err != nil {
		return err
	}
	desired, err := c.dec.value()
	if err != nil {
		return err
	}
	return c.replyValue(c.st.compareSet(key, expected, desired))
}

func (c *serverConn) check() error {
	keys, err := c.dec.keys()
	if err != nil {
		return err
	}
	ok, err := c.st.check(keys)
	if err != nil {
		return err
	}
	answer := notReady
	if ok {
		answer = ready
	}
	return c.reply(func(e encoder) { e.u8(answer) })
}

func (c *serverConn) wait() error {
	keys, err := c.dec.keys()
	if err != nil {
		return err
	}
	return c.replyIfNow(c.st.wait(c, keys))
}

func (c *serverConn) barrier() error {
	key, err := c.dec.key()
	if err != nil {
		return err
	}
	worldSize, err := c.dec.i64()
	if err != nil {
		return err
	}
	return c.replyIfNow(c.st.barrier(c, key, worldSize))
}

// replyIfNow answers a WAIT or BARRIER that need not wait; one that must is
// answered by the write that releases it.
func (c *serverConn) replyIfNow(now bool, err error) error {
	if err != nil || !now {
		return err
	}
	return c.reply(func(e encoder) { e.u8(stopWaiting) })
}

func (c *serverConn) cancelWait() error {
	c.st.cancel(c)
	return c.reply(func(e encoder) { e.u8(waitCanceled) })
}

func (c *serverConn) numKeys() error { return c.replyInt(c.st.numKeys()) }

func (c *serverConn) deleteKey() error {
	key, err := c.dec.key()
	if err != nil {
		return err
	}
	ok, err := c.st.deleteKey(key)
	var erased int64
	if ok {
		erased = 1
	}
	return c.replyInt(erased, err)
}

func (c *serverConn) multiGet() error {
	keys, err := c.dec.keys()
	if err != nil {
		return err
	}
	values, err := c.st.multiGet(keys)
	if err != nil {
		return err
	}
	return c.reply(func(e encoder) {
		for _, v := range values {
			e.bytes(v)
		}
	})
}

func (c *serverConn) multiSet() error {
	n, err := c.dec.count()
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
	return c.st.multiSet(keys, values)
}

func (c *serverConn) queuePop() error {
	key, err := c.dec.key()
	if err != nil {
		return err
	}
	n, head := c.st.queuePop(key)
	return c.reply(func(e encoder) {
		e.i64(n)
		if n > 0 {
			e.bytes(head)
		}
	})
}

func (c *serverConn) queueLen() error {
	key, err := c.dec.key()
	if err != nil {
		return err
	}
	return c.replyInt(c.st.queueLen(key), nil)
}

func (c *serverConn) listKeys() error {
	keys, err := c.st.listKeys()
	if err != nil {
		return err
	}
	return c.reply(func(e encoder) {
		e.i64(int64(len(keys)))
		for _, k := range keys {
			e.str(k)
		}
	})
}

// replyValue answers with v unless err closes the connection.
func (c *serverConn) replyValue(v []byte, err error) error {
	if err != nil {
		return err
	}
	return c.reply(func(e encoder) { e.bytes(v) })
}

// replyInt answers with n unless err closes the connection.
func (c *serverConn) replyInt(n int64, err error) error {
	if err != nil {
		return err
	}
	return c.reply(func(e encoder) { e.i64(n) })
}
