package link

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/transport"
)

// mailbox is an actor that stands for a link or a rank: it hands every
// user message it gets to a channel.
func mailbox(rt *actors.Runtime) (*actor.PID, chan any) {
	got := make(chan any, 16)
	pid := rt.System().Root.Spawn(rt.Props(func() actor.Actor { return &forwarder{out: got} }))
	return pid, got
}

func controlFrame(seq uint64) transport.Frame {
	return transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Control, Seq: seq, Tag: 5}}
}

// receive takes the next value from c, failing t if none comes.
func receive[T any](t *testing.T, c chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never came", what)
		var zero T
		return zero
	}
}

// TestControlGoesAroundAnIdleLink: a control frame goes straight on the
// plane's connection while nothing waits in the link's mailbox, and
// through the link once something does, behind it, until the link says
// it sent it all; and through the link for good once it is to stop.
func TestControlGoesAroundAnIdleLink(t *testing.T) {
	rt := actors.NewRuntime(slog.New(slog.DiscardHandler))
	defer rt.Shutdown()
	p, peer := connectedPlane(t)
	link, queued := mailbox(rt)
	root := rt.System().Root

	SendControl(root, link, p, controlFrame(1))
	if f := receive(t, peer, "the control frame sent around the idle link"); f.Header.Seq != 1 || f.Header.Kind&direct != 0 {
		t.Fatalf("the peer got %+v, want control frame 1, not marked direct", f.Header)
	}

	window := transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Window, Seq: 7}}
	p.Post(root, link, &Send{Frame: window})
	SendControl(root, link, p, controlFrame(2))
	SendControl(root, link, p, controlFrame(3))
	for _, want := range []transport.Header{window.Header, controlFrame(2).Header, controlFrame(3).Header} {
		m := receive(t, queued, "a frame queued at the link")
		if s, ok := m.(*Send); !ok || s.Frame.Header != want {
			t.Fatalf("the link got %#v, want a Send of %+v", m, want)
		}
	}
	nothingBefore(t, p, peer) // none went around the busy link

	for range 3 {
		p.sent()
	}
	SendControl(root, link, p, controlFrame(4))
	if f := receive(t, peer, "the control frame sent once the link had sent the rest"); f.Header.Seq != 4 {
		t.Fatalf("the peer got %+v, want control frame 4", f.Header)
	}

	// Once the link is to stop, everything goes behind the stop, for good.
	p.Stopping()
	for seq := uint64(5); seq <= 6; seq++ {
		SendControl(root, link, p, controlFrame(seq))
		m := receive(t, queued, "a control frame sent once the link was to stop")
		if s, ok := m.(*Send); !ok || s.Frame.Header.Seq != seq {
			t.Fatalf("the link got %#v, want a Send of control frame %d", m, seq)
		}
		p.sent()
	}
	nothingBefore(t, p, peer)
}

// TestControlSkipsTheReceivingLink: the handler hands a control frame to
// the link's parent itself, counts it as word from the peer, and drops
// those that come once the link has failed, so that the parent hears of
// none after the link's Failed.
func TestControlSkipsTheReceivingLink(t *testing.T) {
	rt := actors.NewRuntime(slog.New(slog.DiscardHandler))
	defer rt.Shutdown()
	self, toLink := mailbox(rt)
	parent, toParent := mailbox(rt)
	p := NewPlane(1)
	h := handler{rt: rt, self: self, parent: parent, peer: 1, plane: p}

	h.HandleFrame(controlFrame(1))
	d, ok := receive(t, toParent, "the control frame").(*Delivered)
	if !ok || d.Peer != 1 || d.Frame.Header != controlFrame(1).Header {
		t.Fatalf("the parent got %#v, want control frame 1 from peer 1", d)
	}
	if n := p.heard.Load(); n != 1 {
		t.Fatalf("the plane heard %d frames, want 1", n)
	}

	p.fail(errors.New("the peer is gone"))
	h.HandleFrame(controlFrame(2))
	window := transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Window, Seq: 7}}
	h.HandleFrame(window) // a frame for the link still goes there
	if m, ok := receive(t, toLink, "the window frame").(*Delivered); !ok || m.Frame.Header != window.Header {
		t.Fatalf("the link got %#v, want the window frame", m)
	}
	// The parent's mailbox keeps order: a frame posted to it before the
	// marker would come first.
	rt.System().Root.Send(parent, "marker")
	if m := receive(t, toParent, "the marker"); m != "marker" {
		t.Fatalf("the parent got %#v after the link failed", m)
	}
}

// TestStaleControlStaysOffTheParent: a control frame that Strays.Stale
// calls stale is dropped on the transport's goroutine, yet counts as word
// from the peer; one it does not call stale reaches the parent, after
// none of the dropped ones.
func TestStaleControlStaysOffTheParent(t *testing.T) {
	rt := actors.NewRuntime(slog.New(slog.DiscardHandler))
	defer rt.Shutdown()
	self, _ := mailbox(rt)
	parent, toParent := mailbox(rt)
	var asked []uint64
	strays := &Strays{Stale: func(h transport.Header, payload []byte) bool {
		asked = append(asked, h.Seq)
		return h.Seq%2 == 0
	}}
	p := strays.NewPlane(1)
	h := handler{rt: rt, self: self, parent: parent, peer: 1, plane: p}

	for seq := uint64(2); seq <= 5; seq++ {
		h.HandleFrame(controlFrame(seq))
	}
	for _, want := range []uint64{3, 5} {
		d, ok := receive(t, toParent, "a control frame not stale").(*Delivered)
		if !ok || d.Frame.Header.Seq != want {
			t.Fatalf("the parent got %#v, want control frame %d", d, want)
		}
	}
	rt.System().Root.Send(parent, "marker")
	if m := receive(t, toParent, "the marker"); m != "marker" {
		t.Fatalf("the parent got %#v, a stale frame", m)
	}
	if n := p.heard.Load(); n != 4 {
		t.Fatalf("the plane heard %d frames, want 4, the stale ones too", n)
	}
	if !slices.Equal(asked, []uint64{2, 3, 4, 5}) {
		t.Fatalf("Stale was asked of %v, want every control frame", asked)
	}
}
