package quorum

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoders of what other processes
// write into the store: a joiner's entry and a round's decision. They must
// never panic, and whatever they accept must encode to bytes that decode
// to the same value. The bytes need not be the input's own: ParseInt and
// Fields also take "+1", "01" and extra blanks, which mean the same.
//
//	go test -run XXX -fuzz FuzzDecode ./quorum
func FuzzDecode(f *testing.F) {
	e := entry{expect: 3, handle: "host:1234\nrank 0"}
	f.Add(e.encode())
	f.Add(entry{handle: "h"}.encode())
	ms := []member{{slot: 1, entry: entry{handle: "a"}}, {slot: 7, entry: entry{handle: "b c\n"}}}
	dec := encodeDecision("0f1e2d3c", ms)
	f.Add(dec)
	f.Add(encodeDecision("id", nil))
	f.Add(dec[:len(dec)-2])
	f.Add(bytes.Replace(dec, []byte("1 1\n"), []byte("1 99\n"), 1))
	f.Add([]byte("-1\nh"))
	f.Add([]byte("9223372036854775808\nh"))

	f.Fuzz(func(t *testing.T, data []byte) {
		if e, err := decodeEntry(data); err == nil {
			if again, err := decodeEntry(e.encode()); err != nil || again != e {
				t.Fatalf("entry %q accepted as %+v, which encodes as %q, decoded as %+v, %v", data, e, e.encode(), again, err)
			}
		}
		r, slots, err := decodeDecision(data)
		if err != nil {
			return
		}
		if len(slots) != len(r.Members) {
			t.Fatalf("decision %q decoded as %d slots for %d members", data, len(slots), len(r.Members))
		}
		ms := make([]member, len(slots))
		for i, s := range slots {
			ms[i] = member{slot: s, entry: entry{handle: r.Members[i]}}
		}
		enc := encodeDecision(r.ID, ms)
		r2, slots2, err := decodeDecision(enc)
		if err != nil || r2.ID != r.ID || !slices.Equal(r2.Members, r.Members) || !slices.Equal(slots2, slots) {
			t.Fatalf("decision %q accepted as %+v %v, which encodes as %q, decoded as %+v %v, %v", data, r, slots, enc, r2, slots2, err)
		}
	})
}
