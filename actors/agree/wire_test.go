package agree

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func sortedRanks(size int) *rapid.Generator[[]int] {
	return rapid.Custom(func(t *rapid.T) []int {
		rs := rapid.SliceOfNDistinct(rapid.IntRange(0, size-1), 0, size, rapid.ID[int]).Draw(t, "ranks")
		slices.Sort(rs)
		return rs
	})
}

// TestWireRoundTrip: a message decodes to what was encoded.
func TestWireRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 300).Draw(t, "size")
		m := Msg{
			Kind: Kind(rapid.IntRange(int(Prepare), int(Nack)).Draw(t, "kind")), From: rapid.IntRange(0, size-1).Draw(t, "from"),
			To: rapid.IntRange(0, size-1).Draw(t, "to"), Ballot: rapid.Uint64().Draw(t, "ballot"),
			AcceptedBallot: rapid.Uint64().Draw(t, "accepted"),
			Value:          Value{Flags: rapid.Uint64().Draw(t, "vflags"), Failed: sortedRanks(size).Draw(t, "vfailed")},
			Flags:          rapid.Uint64().Draw(t, "flags"), Failed: sortedRanks(size).Draw(t, "failed"),
		}
		got, err := Decode(m.From, m.To, size, Encode(m))
		if err != nil || got.Kind != m.Kind || got.Ballot != m.Ballot || got.AcceptedBallot != m.AcceptedBallot ||
			got.Value.Flags != m.Value.Flags || !slices.Equal(got.Value.Failed, m.Value.Failed) ||
			got.Flags != m.Flags || !slices.Equal(got.Failed, m.Failed) || got.From != m.From || got.To != m.To {
			t.Fatalf("%+v came back as %+v, %v", m, got, err)
		}
	})
}

// FuzzDecode: bytes from the network never panic the decoder, and what it
// accepts names ranks of the communicator only, sorted, and encodes back.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(Msg{Kind: Promise, Ballot: 1 << 32, Value: Value{Failed: []int{1, 3}}, Failed: []int{2}}))
	f.Add([]byte{byte(Nack), 0x80})
	f.Fuzz(func(t *testing.T, p []byte) {
		const size = 6
		m, err := Decode(0, 1, size, p)
		if err != nil {
			return
		}
		for _, rs := range [][]int{m.Value.Failed, m.Failed} {
			if !slices.IsSorted(rs) || len(rs) > size || slices.ContainsFunc(rs, func(r int) bool { return r < 0 || r >= size }) {
				t.Fatalf("%x decoded to ranks %v", p, rs)
			}
		}
		if again, err := Decode(0, 1, size, Encode(m)); err != nil || again.Ballot != m.Ballot || !slices.Equal(again.Failed, m.Failed) {
			t.Fatalf("%x decoded to %+v, which does not round-trip: %+v, %v", p, m, again, err)
		}
	})
}
