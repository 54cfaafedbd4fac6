package link

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/transport"
)

// TestReleaseEndsOnceBothEndsReleased: a link that released its end
// sends nothing more and keeps what it is given; its peer hears that it
// did (ReleaseAsked) and still delivers what came before; once the peer
// releases too, both end with no failure, each handing its parent what
// it kept: the one, the frames it was given after its release; the
// other, the collective frames its plane kept for operations that had
// not attached.
func TestReleaseEndsOnceBothEndsReleased(t *testing.T) {
	rt := actors.NewRuntime(slog.New(slog.DiscardHandler))
	defer rt.Shutdown()
	parent, toB, toA := linkPair(t, rt) // rank 0's link to rank 1, and rank 1's to rank 0
	root := rt.System().Root
	next := parent.next(t)

	early := transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Collective, Seq: 5}, Payload: []byte{5}}
	root.Send(toB, &Send{Frame: early})
	root.Send(toB, &Release{})
	if m, ok := next("rank 1's word that rank 0 released").(*ReleaseAsked); !ok || m.Peer != 0 {
		t.Fatalf("rank 1's parent got %#v, want ReleaseAsked from rank 0", m)
	}
	after := transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Control, Tag: 7}}
	root.Send(toB, &Send{Frame: after})
	root.Send(toA, &Release{})
	released := map[int]*Released{}
	for range 2 {
		switch m := next("a Released").(type) {
		case *Released:
			released[m.Peer] = m
		default:
			t.Fatalf("a parent got %#v, want Released", m)
		}
	}
	if r := released[1]; r == nil || len(r.Unsent) != 1 || r.Unsent[0].Header != after.Header || len(r.Early) != 0 {
		t.Errorf("rank 0's link handed back %+v, want the control frame sent after its release", r)
	}
	if r := released[0]; r == nil || len(r.Unsent) != 0 || len(r.Early) != 1 || r.Early[0].Header.Seq != 5 || r.Early[0].Payload[0] != 5 {
		t.Errorf("rank 1's link handed back %+v, want the collective frame its plane kept", r)
	}
	select {
	case m := <-parent.out:
		t.Fatalf("after both released, a parent got %#v", m)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestDeclinedReleaseTakesTheLinkBack: a parent that will not release
// its end when its peer did (an operation holds it) declines, and the
// end that released takes the link back (Declined), sending first what
// it was given since its release, in order; the link then carries frames
// both ways, and a later release by both ends ends it, with nothing left.
func TestDeclinedReleaseTakesTheLinkBack(t *testing.T) {
	rt := actors.NewRuntime(slog.New(slog.DiscardHandler))
	defer rt.Shutdown()
	parent, toB, toA := linkPair(t, rt) // rank 0's link to rank 1, and rank 1's to rank 0
	root := rt.System().Root
	next := parent.next(t)
	control := func(tag uint32) transport.Frame {
		return transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Control, Tag: tag}}
	}
	delivered := func(what string, from int, tag uint32) {
		t.Helper()
		if m, ok := next(what).(*Delivered); !ok || m.Peer != from || m.Frame.Header.Tag != tag {
			t.Fatalf("a parent got %#v, want %s: rank %d's control frame %d", m, what, from, tag)
		}
	}

	root.Send(toB, &Release{})
	if m, ok := next("rank 1's word that rank 0 released").(*ReleaseAsked); !ok || m.Peer != 0 {
		t.Fatalf("rank 1's parent got %#v, want ReleaseAsked from rank 0", m)
	}
	root.Send(toB, &Send{Frame: control(7)}) // kept: rank 0's end released
	root.Send(toB, &Send{Frame: control(8)})
	root.Send(toA, &Decline{})
	// Rank 0's parent hears of the decline, and rank 1's gets the frames
	// in order; the two parents' mailboxes are one here, which orders
	// neither before the other.
	declined, tags := false, []uint32(nil)
	for range 3 {
		switch m := next("the decline and the frames kept").(type) {
		case *Declined:
			declined = m.Peer == 1
		case *Delivered:
			if m.Peer == 0 {
				tags = append(tags, m.Frame.Header.Tag)
			}
		}
	}
	if !declined || !slices.Equal(tags, []uint32{7, 8}) {
		t.Fatalf("declined by rank 1 %v, rank 1 got control frames %v; want true, [7 8]", declined, tags)
	}
	root.Send(toA, &Send{Frame: control(9)})
	delivered("a frame the other way", 1, 9)

	root.Send(toB, &Release{})
	if m, ok := next("rank 1's word that rank 0 released again").(*ReleaseAsked); !ok || m.Peer != 0 {
		t.Fatalf("rank 1's parent got %#v, want ReleaseAsked from rank 0", m)
	}
	root.Send(toA, &Release{})
	for range 2 {
		if m, ok := next("a Released").(*Released); !ok || len(m.Unsent) != 0 || len(m.Early) != 0 {
			t.Fatalf("a parent got %#v, want Released with nothing kept", m)
		}
	}
}

// next returns what takes the forwarder's next message, failing t if none
// comes within ten seconds: what says which message t waits for.
func (f *forwarder) next(t *testing.T) func(what string) any {
	return func(what string) any {
		t.Helper()
		select {
		case m := <-f.out:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never came", what)
			return nil
		}
	}
}
