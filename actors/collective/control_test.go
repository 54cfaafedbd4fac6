package collective

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestControlPayloadsRoundTrip: every control payload decodes to what was
// encoded, for any ranks of any communicator size.
func TestControlPayloadsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 1<<20).Draw(t, "size")
		rank := rapid.IntRange(0, size-1)

		r, reason := rank.Draw(t, "reporter"), rapid.String().Draw(t, "reason")
		if gr, gkind, greason, err := DecodeFailure(EncodeFailure(r, FailedCanceled, reason)); err != nil || gr != r || gkind != FailedCanceled || greason != reason {
			t.Fatalf("failure (%d, %q) came back as (%d, %q, %v)", r, reason, gr, greason, err)
		}

		failed, accuser := rank.Draw(t, "failed"), rank.Draw(t, "accuser")
		if gf, ga, err := DecodePeerFailed(size, EncodePeerFailed(failed, accuser)); err != nil || gf != failed || ga != accuser {
			t.Fatalf("peer failed (%d, %d) came back as (%d, %d, %v)", failed, accuser, gf, ga, err)
		}

		revoker := rank.Draw(t, "revoker")
		if got, err := DecodeRevoked(size, EncodeRevoked(revoker)); err != nil || got != revoker {
			t.Fatalf("revoke by %d came back as %d, %v", revoker, got, err)
		}

		asker := rapid.Uint64().Draw(t, "asker")
		if got, err := DecodeProbe(EncodeProbe(asker)); err != nil || got != asker {
			t.Fatalf("probe %d came back as %d, %v", asker, got, err)
		}

		want := ProbeReply{Peer: rank.Draw(t, "peer"), Status: ProbeStatus(rapid.IntRange(int(NotReached), int(Left)).Draw(t, "status"))}
		want.Waiting = rapid.SliceOfN(rank, 0, 16).Draw(t, "waiting")
		var at uint64
		switch want.Status {
		case Behind:
			want.At = rapid.Uint64().Draw(t, "at")
			at = want.At
		case Left:
			want.Accuser = rank.Draw(t, "left accuser")
			at = uint64(want.Accuser)
		}
		got, err := DecodeProbeReply(want.Peer, size, EncodeProbeReply(want.Status, at, want.Waiting))
		if err != nil || got.Peer != want.Peer || got.Status != want.Status || got.At != want.At || got.Accuser != want.Accuser ||
			!slices.Equal(got.Waiting, want.Waiting) && len(got.Waiting)+len(want.Waiting) > 0 {
			t.Fatalf("probe reply %+v came back as %+v, %v", want, got, err)
		}
	})
}

// FuzzControlPayloads: the decoders of control frames, which come from
// the network, never panic, and whatever they accept names ranks of the
// communicator only and encodes back to the same bytes.
func FuzzControlPayloads(f *testing.F) {
	f.Add(EncodeProbeReply(Left, 3, []int{1, 2}), EncodePeerFailed(1, 2))
	f.Add(EncodeProbeReply(Behind, 1<<40, nil), EncodeProbe(7))
	f.Add([]byte{byte(Left) + 1}, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		const size = 8
		for _, p := range [][]byte{a, b} {
			if r, err := DecodeProbeReply(0, size, p); err == nil {
				for _, w := range append(slices.Clone(r.Waiting), r.Accuser) {
					if w < 0 || w >= size {
						t.Fatalf("probe reply %x names rank %d of %d", p, w, size)
					}
				}
				at := r.At
				if r.Status == Left {
					at = uint64(r.Accuser)
				}
				if back := EncodeProbeReply(r.Status, at, r.Waiting); !slices.Equal(back, p) {
					// Uvarints have one shortest form; a longer one decodes
					// the same and need not come back byte for byte.
					if again, err := DecodeProbeReply(0, size, back); err != nil || again.Status != r.Status || !slices.Equal(again.Waiting, r.Waiting) {
						t.Fatalf("probe reply %x decoded to %+v, which re-encodes to %x", p, r, back)
					}
				}
			}
			if failed, accuser, err := DecodePeerFailed(size, p); err == nil && (failed >= size || accuser >= size || failed < 0 || accuser < 0) {
				t.Fatalf("peer-failed report %x names ranks %d and %d of %d", p, failed, accuser, size)
			}
			if revoker, err := DecodeRevoked(size, p); err == nil && (revoker < 0 || revoker >= size) {
				t.Fatalf("revoke %x names rank %d of %d", p, revoker, size)
			}
			DecodeProbe(p)
			DecodeFailure(p)
		}
	})
}
