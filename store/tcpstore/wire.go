package tcpstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// PyTorch copies integers in host byte order. Every host it ships for is
// little-endian, so this package fixes that order; a big-endian PyTorch
// host would not interoperate with its own kind on other hosts either.
var order = binary.LittleEndian

// errLimit reports a length, count or size over the limits.
var errLimit = errors.New("over the limit")

// overLimit reports n of what over the Limits field name, which is limit.
func overLimit(what string, n int, name string, limit int) error {
	return fmt.Errorf("%s of %d: %w %s=%d", what, n, errLimit, name, limit)
}

// decoder reads protocol fields. A length over its limits is refused before
// anything is allocated, and a payload is read in growing chunks, so a
// length prefix alone never costs more memory than the bytes that follow it.
type decoder struct {
	r      *bufio.Reader
	limits Limits
	budget int // bytes of keys and values the current message may still carry
}

func (d *decoder) u8() (byte, error) { return d.r.ReadByte() }

func (d *decoder) u32() (uint32, error) {
	var b [4]byte
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		return 0, err
	}
	return order.Uint32(b[:]), nil
}

func (d *decoder) u64() (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		return 0, err
	}
	return order.Uint64(b[:]), nil
}

func (d *decoder) i64() (int64, error) {
	v, err := d.u64()
	return int64(v), err
}

// length reads a u64 length or count and checks it against limit.
func (d *decoder) length(what string, limit int) (int, error) {
	n, err := d.u64()
	if err != nil {
		return 0, err
	}
	if n > uint64(limit) {
		return 0, fmt.Errorf("%s of %d: %w of %d", what, n, errLimit, limit)
	}
	return int(n), nil
}

// count reads the number of keys in a list.
func (d *decoder) count() (int, error) { return d.length("key count", d.limits.MaxKeys) }

// bytes reads a string of at most limit bytes, charged to the budget.
func (d *decoder) bytes(what string, limit int) ([]byte, error) {
	n, err := d.length(what+" length", min(limit, d.budget))
	if err != nil {
		return nil, err
	}
	d.budget -= n
	return readN(d.r, n)
}

func (d *decoder) value() ([]byte, error) { return d.bytes("value", d.limits.MaxValueLen) }

func (d *decoder) key() (string, error) {
	b, err := d.bytes("key", d.limits.MaxKeyLen)
	return string(b), err
}

// keys reads a count and that many keys.
func (d *decoder) keys() ([]string, error) {
	n, err := d.count()
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, min(n, 1024)) // grown as keys arrive
	for range n {
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// firstChunk is the most readN allocates before any payload has arrived.
const firstChunk = 64 << 10

// readN reads exactly n bytes, doubling its buffer as they arrive.
func readN(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, firstChunk))
	for len(buf) < n {
		end := min(n, max(2*len(buf), firstChunk))
		if end > cap(buf) {
			grown := make([]byte, len(buf), end)
			copy(grown, buf)
			buf = grown
		}
		if _, err := io.ReadFull(r, buf[len(buf):end]); err != nil {
			return nil, unexpectedEOF(err)
		}
		buf = buf[:end]
	}
	return buf, nil
}

// unexpectedEOF reports an end of stream inside a field as such.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// encoder writes protocol fields. Errors stick in the bufio.Writer and
// come out of Flush.
type encoder struct{ w *bufio.Writer }

func (e encoder) u8(b byte) { e.w.WriteByte(b) }

func (e encoder) u32(v uint32) {
	var b [4]byte
	order.PutUint32(b[:], v)
	e.w.Write(b[:])
}

func (e encoder) u64(v uint64) {
	var b [8]byte
	order.PutUint64(b[:], v)
	e.w.Write(b[:])
}

func (e encoder) i64(v int64) { e.u64(uint64(v)) }

func (e encoder) bytes(b []byte) {
	e.u64(uint64(len(b)))
	e.w.Write(b)
}

func (e encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.w.WriteString(s)
}

func (e encoder) keys(keys []string) {
	e.u64(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
	}
}

// noBudget is the budget of a decoder whose messages are not bounded as a
// whole (a client reading replies from the server it chose).
const noBudget = math.MaxInt
