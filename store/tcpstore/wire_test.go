package tcpstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeLengthAllocatesLittle: a value announced at a 1 GiB limit, with ten bytes behind it costs about the first chunk, not the
// announced size.
func TestHugeLengthAllocatesLittle(t *testing.T) {
	in := binary.LittleEndian.AppendUint64(nil, 1<<30)
	in = append(in, "ten bytes."...)
	d := decoder{r: bufio.NewReader(bytes.NewReader(in)), limits: Limits{MaxValueLen: 1 << 30}.withDefaults()}
	d.budget = d.limits.requestBudget()
	var err error
	if n := allocated(func() { _, err = d.value() }); n > 1<<20 {
		t.Errorf("reading a truncated 1 GiB value allocated %d bytes", n)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading a truncated value: %v, want ErrUnexpectedEOF", err)
	}
}

func TestDecoderLimits(t *testing.T) {
	limits := Limits{MaxKeyLen: 4, MaxValueLen: 8, MaxKeys: 2}
	decode := func(in []byte, read func(d *decoder) error) error {
		d := decoder{r: bufio.NewReader(bytes.NewReader(in)), limits: limits, budget: limits.requestBudget()}
		return read(&d)
	}
	str := func(s string) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, uint64(len(s))), s...)
	}
	key := func(d *decoder) error { _, err := d.key(); return err }
	value := func(d *decoder) error { _, err := d.value(); return err }
	keys := func(d *decoder) error { _, err := d.keys(); return err }
	for _, tt := range []struct {
		name string
		in   []byte
		read func(*decoder) error
		ok   bool
	}{
		{"key at the limit", str("abcd"), key, true},
		{"key over", str("abcde"), key, false},
		{"value at the limit", str("12345678"), value, true},
		{"value over", str("123456789"), value, false},
		{"length 2^64-1", binary.LittleEndian.AppendUint64(nil, ^uint64(0)), value, false},
		{"two keys", append(append(binary.LittleEndian.AppendUint64(nil, 2), str("a")...), str("b")...), keys, true},
		{"three keys", binary.LittleEndian.AppendUint64(nil, 3), keys, false},
		{"over the budget", append(append(str("1234"), str("12345678")...), str("x")...), func(d *decoder) error {
			for range 3 {
				if _, err := d.value(); err != nil {
					return err
				}
			}
			return nil
		}, false},
	} {
		err := decode(tt.in, tt.read)
		if tt.ok && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if !tt.ok && !errors.Is(err, errLimit) {
			t.Errorf("%s: %v, want errLimit", tt.name, err)
		}
	}
}

func TestReadN(t *testing.T) {
	for _, n := range []int{0, 1, firstChunk - 1, firstChunk, firstChunk + 1, 5*firstChunk + 3} {
		in := bytes.Repeat([]byte{7}, n)
		got, err := readN(bytes.NewReader(in), n)
		if err != nil || !bytes.Equal(got, in) {
			t.Errorf("readN(%d) = %d bytes, %v", n, len(got), err)
		}
		if _, err := readN(bytes.NewReader(in), n+1); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("readN(%d) of %d bytes: %v, want ErrUnexpectedEOF", n+1, n, err)
		}
	}
}
