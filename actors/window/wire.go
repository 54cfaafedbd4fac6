package window

import (
	"encoding/binary"
	"fmt"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
)

// replyBit marks a reply in a frame's Tag, the code of its request with
// it set.
const replyBit backend.WindowCode = 1 << 31

// replies reports whether the origin waits for a reply to c: for what c
// reads back, or for the completion a flush asks about.
func replies(c backend.WindowCode) bool {
	switch c {
	case backend.WindowGet, backend.WindowGetAccumulate, backend.WindowFetchAndOp, backend.WindowCompareAndSwap, backend.WindowFlush, backend.WindowLock, backend.WindowUnlock:
		return true
	}
	return false
}

// request is the payload of an operation's frame, less its data. Offset
// and Len are in bytes of the target's window; Len is what a get reads
// back, or the length of the data that follows.
type request struct {
	Offset   uint64
	Len      uint64
	DType    tensor.DType
	Reduce   reduce.Kind
	SignalOp backend.SignalOp
	Slot     uint32
	Value    uint64 // the signal's
}

// requestSize is the fixed part of a request payload: offset, length,
// dtype, reduction, signal op, a zero byte, slot, and signal value, little
// endian.
const requestSize = 32

func (r *request) encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], r.Offset)
	binary.LittleEndian.PutUint64(b[8:], r.Len)
	b[16], b[17], b[18], b[19] = byte(r.DType), byte(r.Reduce), byte(r.SignalOp), 0
	binary.LittleEndian.PutUint32(b[20:], r.Slot)
	binary.LittleEndian.PutUint64(b[24:], r.Value)
}

// decodeRequest parses the payload of an operation of code c, returning
// the request and its data. It checks what the bytes alone can say; the
// window's bounds are the applier's to check.
func decodeRequest(c backend.WindowCode, p []byte) (request, []byte, error) {
	if len(p) < requestSize {
		return request{}, nil, fmt.Errorf("window: %v: payload of %d bytes, shorter than its %d-byte header", c, len(p), requestSize)
	}
	r := request{
		Offset: binary.LittleEndian.Uint64(p[0:]), Len: binary.LittleEndian.Uint64(p[8:]),
		DType: tensor.DType(p[16]), Reduce: reduce.Kind(p[17]), SignalOp: backend.SignalOp(p[18]),
		Slot: binary.LittleEndian.Uint32(p[20:]), Value: binary.LittleEndian.Uint64(p[24:]),
	}
	data := p[requestSize:]
	if p[19] != 0 || r.SignalOp > backend.SignalAdd {
		return request{}, nil, fmt.Errorf("window: %v: malformed header", c)
	}
	var want uint64 // the data's length
	switch c {
	case backend.WindowPut, backend.WindowAccumulate, backend.WindowGetAccumulate:
		want = r.Len
	case backend.WindowFetchAndOp:
		want = 8
	case backend.WindowCompareAndSwap:
		want = 16 // the value, then what it is compared with
	}
	if uint64(len(data)) != want {
		return request{}, nil, fmt.Errorf("window: %v: %d bytes of data, want %d", c, len(data), want)
	}
	switch c {
	case backend.WindowAccumulate, backend.WindowGetAccumulate, backend.WindowFetchAndOp:
		if !r.DType.Valid() || !r.Reduce.Valid() {
			return request{}, nil, fmt.Errorf("window: %v: dtype %d or reduction %d unknown", c, p[16], p[17])
		}
	case backend.WindowCompareAndSwap:
		if r.Len != 8 {
			return request{}, nil, fmt.Errorf("window: %v of %d bytes, not 8", c, r.Len)
		}
	case backend.WindowLock:
		if r.Value > 1 {
			return request{}, nil, fmt.Errorf("window: %v of kind %d", c, r.Value)
		}
	}
	return r, data, nil
}

// A reply's payload is a status byte and then the bytes read, or the
// error's text.
const (
	replyOK  byte = 0
	replyErr byte = 1
)

// decodeReply parses a reply payload into what was read back, or the
// target's error.
func decodeReply(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return nil, fmt.Errorf("window: empty reply")
	}
	switch p[0] {
	case replyOK:
		return p[1:], nil
	case replyErr:
		return nil, &TargetError{Reason: string(p[1:])}
	}
	return nil, fmt.Errorf("window: reply status %d unknown", p[0])
}

// TargetError is an operation the target refused: its reason, as the
// target put it.
type TargetError struct{ Reason string }

func (e *TargetError) Error() string { return "the target refused: " + e.Reason }
