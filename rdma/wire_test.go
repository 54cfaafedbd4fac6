package rdma

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestResponderTranscript feeds a responder a script of requests and
// checks each reply, byte by byte where it carries data, and the memory
// after.
func TestResponderTranscript(t *testing.T) {
	whole := alignedBytes(80)
	mem := whole[8:72]
	copy(mem, "0123456789abcdef")
	registerAt(t, mem, fuzzKey, fuzzBase)
	putNativeWord(mem[16:24], 40)

	var in []byte
	in = appendRequest(in, request{op: opWrite, notify: true, id: 1, addr: fuzzBase + 4, n: 4, key: fuzzKey}, []byte("WXYZ"))
	in = appendRequest(in, request{op: opRead, id: 2, addr: fuzzBase + 2, n: 8, key: fuzzKey}, nil)
	in = appendRequest(in, request{op: opFetchAdd, id: 3, addr: fuzzBase + 16, n: 8, key: fuzzKey, a: 2}, nil)
	in = appendRequest(in, request{op: opCompareAndSwap, id: 4, addr: fuzzBase + 16, n: 8, key: fuzzKey, a: 42, b: 7}, nil)
	in = appendRequest(in, request{op: opWrite, id: 5, addr: fuzzBase + 60, n: 8, key: fuzzKey}, []byte("past end"))
	in = appendRequest(in, request{op: opRead, id: 6, addr: fuzzBase, n: 8, key: fuzzKey + 1}, nil)
	in = appendRequest(in, request{op: opFetchAdd, id: 7, addr: fuzzBase + 4, n: 8, key: fuzzKey, a: 1}, nil)
	in = appendRequest(in, request{op: opWrite, notify: true, id: 8, addr: fuzzBase + 64, n: 0, key: fuzzKey}, nil)

	var out bytes.Buffer
	notes := 0
	r := newResponder(bytes.NewReader(in), &out, func() { notes++ })
	if err := r.serve(); !errors.Is(err, errPeerClosed) {
		t.Fatalf("serve: %v, want a clean end", err)
	}
	for _, want := range []struct {
		rep     reply
		payload string
	}{
		{reply{id: 1}, ""},
		{reply{id: 2, value: 8}, "23WXYZ89"},
		{reply{id: 3, value: 40}, ""},
		{reply{id: 4, value: 42}, ""},
		{reply{status: statusBounds, id: 5}, ""},
		{reply{status: statusUnregistered, id: 6}, ""},
		{reply{status: statusMisaligned, id: 7}, ""},
		{reply{id: 8}, ""},
	} {
		var h [repHeaderLen]byte
		putReply(&h, want.rep)
		got := out.Next(repHeaderLen + len(want.payload))
		if !bytes.Equal(got, append(h[:], want.payload...)) {
			t.Errorf("reply %d: %x, want %x%x", want.rep.id, got, h, want.payload)
		}
	}
	if out.Len() != 0 {
		t.Errorf("%d bytes after the last reply", out.Len())
	}
	if got := nativeWord(mem[16:24]); got != 7 {
		t.Errorf("word after fetch-add 2 and CAS 42->7: %d", got)
	}
	if string(mem[:16]) != "0123WXYZ89abcdef" || !allZero(whole[:8]) || !allZero(whole[72:]) {
		t.Errorf("memory after the script: %q", whole)
	}
	if notes != 2 {
		t.Errorf("%d notifications, want 2 (the failed write does not count)", notes)
	}
}

// TestResponderRejects checks that the responder stops at the first bad
// request header, saying what was wrong, before touching memory.
func TestResponderRejects(t *testing.T) {
	mem := registerAt(t, alignedBytes(16), fuzzKey, fuzzBase).buf
	ok := request{op: opWrite, id: 1, addr: fuzzBase, n: 8, key: fuzzKey}
	for _, c := range []struct {
		name   string
		mutate func(*request, *[reqHeaderLen]byte)
		saying string
	}{
		{"id out of sequence", func(q *request, _ *[reqHeaderLen]byte) { q.id = 2 }, "id 2, want 1"},
		{"unknown op", func(q *request, _ *[reqHeaderLen]byte) { q.op = 9 }, "unknown op 9"},
		{"notify on a read", func(q *request, _ *[reqHeaderLen]byte) { q.op, q.notify = opRead, true }, "flags 0x1 for a read"},
		{"unknown flag", func(_ *request, h *[reqHeaderLen]byte) { h[1] = 2 }, "flags 0x2"},
		{"reserved byte", func(_ *request, h *[reqHeaderLen]byte) { h[5] = 1 }, "reserved"},
		{"too long", func(q *request, _ *[reqHeaderLen]byte) { q.n = maxTransfer + 1 }, "over the limit"},
		{"wide atomic", func(q *request, _ *[reqHeaderLen]byte) { q.op, q.n = opFetchAdd, 16 }, "fetch-add of 16 bytes"},
		{"operand on a write", func(q *request, _ *[reqHeaderLen]byte) { q.a = 1 }, "operands 0x1"},
		{"swap on a fetch-add", func(q *request, _ *[reqHeaderLen]byte) { q.op, q.b = opFetchAdd, 3 }, "operands"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := ok
			var h [reqHeaderLen]byte
			c.mutate(&q, &h)
			putRequest(&h, q)
			c.mutate(&q, &h) // byte-level mutations again, after encoding
			in := append(h[:], "payload!"...)
			err := newResponder(bytes.NewReader(in), io.Discard, func() {}).serve()
			if !errors.Is(err, errProtocol) || !bytes.Contains([]byte(err.Error()), []byte(c.saying)) {
				t.Fatalf("serve: %v, want a protocol violation saying %q", err, c.saying)
			}
			if !allZero(mem) {
				t.Fatalf("a rejected request changed memory: %x", mem)
			}
		})
	}
}
