package rdma

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"
)

// fuzzKey and fuzzBase name the registration the fuzzed responder serves:
// a synthetic address, so that inputs stay valid from run to run.
const (
	fuzzKey  = 0xf022
	fuzzBase = 1 << 20
)

// registerAt registers buf under key as if it lay at base, for the
// fuzzer.
func registerAt(t testing.TB, buf []byte, key, base uint64) *Memory {
	m := &Memory{key: key, base: base, buf: buf}
	registry.mu.Lock()
	registry.m[key] = m
	registry.mu.Unlock()
	t.Cleanup(func() { m.Deregister() })
	return m
}

func appendRequest(b []byte, q request, payload []byte) []byte {
	var h [reqHeaderLen]byte
	putRequest(&h, q)
	return append(append(b, h[:]...), payload...)
}

// FuzzDecodeRequests feeds arbitrary bytes to a responder, as a peer's
// connection would: it must never panic, touch memory outside the
// registration, or believe a length it has not checked; and every request
// header it accepts must be exactly what putRequest writes for it.
//
//	go test -run XXX -fuzz FuzzDecodeRequests ./rdma/
func FuzzDecodeRequests(f *testing.F) {
	var valid []byte
	valid = appendRequest(valid, request{op: opWrite, notify: true, id: 1, addr: fuzzBase + 8, n: 4, key: fuzzKey}, []byte("abcd"))
	valid = appendRequest(valid, request{op: opRead, id: 2, addr: fuzzBase, n: 16, key: fuzzKey}, nil)
	valid = appendRequest(valid, request{op: opFetchAdd, id: 3, addr: fuzzBase + 8, n: 8, key: fuzzKey, a: 5}, nil)
	valid = appendRequest(valid, request{op: opCompareAndSwap, id: 4, addr: fuzzBase + 16, n: 8, key: fuzzKey, a: 0, b: 9}, nil)
	valid = appendRequest(valid, request{op: opWrite, id: 5, addr: fuzzBase + 60, n: 8, key: fuzzKey}, []byte("past end"))
	valid = appendRequest(valid, request{op: opRead, id: 6, addr: fuzzBase, n: 8, key: 7}, nil)
	valid = appendRequest(valid, request{op: opFetchAdd, id: 7, addr: fuzzBase + 4, n: 8, key: fuzzKey, a: 1}, nil)
	f.Add(valid)
	f.Add(valid[:len(valid)-3])
	f.Add(appendRequest(nil, request{op: opWrite, id: 1, addr: fuzzBase, n: maxTransfer, key: fuzzKey}, nil))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		// 64 registered bytes between two guards of 8.
		whole := alignedBytes(80)
		registerAt(t, whole[8:72], fuzzKey, fuzzBase)
		// The headers, as the decoder sees them.
		rest, id := data, uint64(1)
		for len(rest) >= reqHeaderLen {
			h := (*[reqHeaderLen]byte)(rest)
			q, err := parseRequest(h, id)
			if err != nil {
				break
			}
			var again [reqHeaderLen]byte
			putRequest(&again, q)
			if again != *h {
				t.Fatalf("request %x accepted as %+v, which encodes as %x", h[:], q, again[:])
			}
			rest, id = rest[reqHeaderLen:], id+1
			if q.op == opWrite {
				if q.n > uint64(len(rest)) {
					break
				}
				rest = rest[q.n:]
			}
		}
		// The responder itself, on the same bytes.
		var replies bytes.Buffer
		r := newResponder(bytes.NewReader(data), &replies, func() {})
		r.br = bufio.NewReaderSize(bytes.NewReader(data), 16) // small, to cross buffer edges
		if err := r.serve(); err == nil {
			t.Fatal("serve returned nil at the end of its input")
		}
		if !allZero(whole[:8]) || !allZero(whole[72:]) {
			t.Fatalf("memory around the registration changed: %x", whole)
		}
	})
}

// FuzzDecodeReplies feeds arbitrary bytes to the requester's reply
// reader, with a queue of every kind of op waiting: it must never panic or
// read a payload into anything but the read's own destination, and every
// reply header it accepts must be exactly what putReply writes for it.
func FuzzDecodeReplies(f *testing.F) {
	var valid []byte
	for _, r := range []reply{{id: 1, value: 4}, {id: 2}, {id: 3, value: 77}, {status: statusBounds, id: 4}, {id: 5}} {
		var h [repHeaderLen]byte
		putReply(&h, r)
		valid = append(valid, h[:]...)
		if r.id == 1 {
			valid = append(valid, "data"...)
		}
	}
	f.Add(valid)
	f.Add(valid[:30])
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		e := &tcpEndpoint{replies: bufio.NewReaderSize(bytes.NewReader(data), 16)}
		dst := make([]byte, 6)
		ops := []*op{
			{kind: opRead, dst: dst[1:5]},
			{kind: opWrite, src: []byte("xy")},
			{kind: opFetchAdd, a: 1},
			{kind: opCompareAndSwap, a: 1, b: 2},
			{kind: opRead, dst: dst[5:5]},
		}
		for i, o := range ops {
			o.id, o.queued = uint64(i+1), true
			e.pending.push(o)
		}
		offset := 0
		for {
			o, _, readErr := e.readReply()
			if readErr != nil {
				break
			}
			var again [repHeaderLen]byte
			got := reply{status: status(e.replyHdr[0]), id: o.id, value: binary.LittleEndian.Uint64(e.replyHdr[16:])}
			putReply(&again, got)
			if again != e.replyHdr {
				t.Fatalf("reply %x accepted, which encodes as %x", e.replyHdr[:], again[:])
			}
			if o.queued {
				t.Fatalf("op %d answered but still queued", o.id)
			}
			offset += repHeaderLen
			if o.kind == opRead && got.status == statusOK {
				offset += len(o.dst)
			}
		}
		if dst[0] != 0 {
			t.Fatalf("a payload landed outside its destination: %x", dst)
		}
		if offset > len(data) {
			t.Fatalf("replies of %d bytes accepted from %d", offset, len(data))
		}
	})
}

// FuzzDecodeHandles feeds arbitrary bytes to the decoders of what crosses
// processes out of band or first on a connection: addresses, remote
// buffers, hellos and answers. Whatever they accept must encode back to
// the same bytes.
func FuzzDecodeHandles(f *testing.F) {
	f.Add([]byte(makeAddress("tcp", tcpPart{nonce: 5, hostport: "10.1.2.3:4567"}.encode())))
	f.Add([]byte(makeAddress("tcp", tcpPart{nonce: 5, hostport: "[::1]:80"}.encode())))
	rb, _ := RemoteBuffer{Addr: 1 << 40, Len: 4096, Key: 99}.MarshalBinary()
	f.Add(rb)
	var hb [helloLen]byte
	tcpProtocol.putHello(&hb, hello{version: tcpProtocol.version, to: 3, from: 4})
	f.Add(hb[:])
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		if name, part, err := Address(data).parse(); err == nil {
			if again := makeAddress(name, part); !bytes.Equal(again, data) {
				t.Fatalf("address %x accepted, which encodes as %x", data, []byte(again))
			}
			_ = Address(data).String()
			if p, err := parseTCPPart(part); err == nil && !bytes.Equal(p.encode(), part) {
				t.Fatalf("tcp part %x accepted as %+v", part, p)
			}
		}
		var r RemoteBuffer
		if err := r.UnmarshalBinary(data); err == nil {
			if again, _ := r.MarshalBinary(); !bytes.Equal(again, data) {
				t.Fatalf("remote buffer %x accepted as %v", data, r)
			}
			if _, err := r.Slice(r.Len/2, r.Len-r.Len/2); err != nil {
				t.Fatalf("the second half of %v: %v", r, err)
			}
		}
		if len(data) >= helloLen {
			b := (*[helloLen]byte)(data)
			if h, err := tcpProtocol.parseHello(b); err == nil && h.version == tcpProtocol.version {
				var again [helloLen]byte
				tcpProtocol.putHello(&again, h)
				if again != *b {
					t.Fatalf("hello %x accepted as %+v", b[:], h)
				}
			}
		}
		if len(data) >= answerLen {
			b := (*[answerLen]byte)(data)
			if v, a, err := tcpProtocol.parseAnswer(b); err == nil {
				var again [answerLen]byte
				tcpProtocol.putAnswer(&again, v, a)
				if again != *b {
					t.Fatalf("answer %x accepted as %v", b[:], a)
				}
			}
		}
	})
}
