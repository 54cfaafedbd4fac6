package link

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
	"github.com/gocomms/gocomms/transport"
)

// forwarder hands the frames and markers it gets to a channel; as a parent it
// spawns the links of the test.
type forwarder struct {
	out   chan any
	links []Config
	pids  chan *actor.PID
	rt    *actors.Runtime
}

func (f *forwarder) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		for _, cfg := range f.links {
			f.pids <- f.rt.SpawnChild(c, Producer(f.rt, cfg), "link")
		}
	case *Delivered, *Send, string, *ReleaseAsked, *Released, *Declined, *Failed:
		f.out <- m
	}
}

// linkPair spawns, under one forwarder, rank 0's link to rank 1 and rank
// 1's to rank 0, joined by an in-process connection.
func linkPair(t *testing.T, rt *actors.Runtime) (parent *forwarder, toOne, toZero *actor.PID) {
	t.Helper()
	net := transport.NewInproc()
	ln, err := net.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan transport.Conn, 1)
	go func() {
		c, _, _ := ln.Accept(context.Background())
		accepted <- c
	}()
	a, err := net.Dial(context.Background(), ln.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	parent = &forwarder{out: make(chan any, 16), pids: make(chan *actor.PID, 2), rt: rt,
		links: []Config{{Comm: 1, Peer: 1, Conn: a}, {Comm: 1, Peer: 0, Conn: b}}}
	rt.System().Root.Spawn(rt.Props(func() actor.Actor { return parent }))
	return parent, <-parent.pids, <-parent.pids
}

// TestRouteCountsFrames checks that a route hands over as many frames as
// it counts, stashed ones first, and no more: the rest wait for the next
// route of their key.
func TestRouteCountsFrames(t *testing.T) {
	rt := actors.NewRuntime(slog.New(slog.DiscardHandler))
	defer rt.Shutdown()
	parent, sender, receiver := linkPair(t, rt)
	got := make(chan any, 16)
	to := rt.System().Root.Spawn(rt.Props(func() actor.Actor { return &forwarder{out: got} }))

	key := Key{Kind: transport.Window, Seq: 7}
	for tag := range 3 {
		f := transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Window, Seq: 7, Tag: uint32(tag)}, Payload: []byte{byte(tag)}}
		rt.System().Root.Send(sender, &Send{Frame: f})
	}
	// A control frame after them reaches the receiver's parent once the
	// receiver's handler has posted them to its link, ahead of the route
	// below: with no route yet, the link stashes them.
	rt.System().Root.Send(sender, &Send{Frame: transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Control, Tag: 99}}})
	select {
	case <-parent.out:
	case <-time.After(10 * time.Second):
		t.Fatal("the control frame sent after the window's never reached the receiver's parent")
	}
	rt.System().Root.Send(receiver, &Route{Key: key, To: to, Frames: 2})
	expect := func(tags ...uint32) {
		t.Helper()
		for _, tag := range tags {
			select {
			case m := <-got:
				if d := m.(*Delivered); d.Frame.Header.Tag != tag {
					t.Fatalf("handed over tag %d, want %d", d.Frame.Header.Tag, tag)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("tag %d never handed over", tag)
			}
		}
		select {
		case m := <-got:
			t.Fatalf("handed over tag %d beyond the route's count", m.(*Delivered).Frame.Header.Tag)
		case <-time.After(100 * time.Millisecond):
		}
	}
	expect(0, 1)
	rt.System().Root.Send(receiver, &Route{Key: key, To: to, Frames: 2})
	expect(2) // the stash's last; the route waits for one more
	f := transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Window, Seq: 7, Tag: 3}, Payload: []byte{3}}
	rt.System().Root.Send(sender, &Send{Frame: f})
	expect(3)
	f.Header.Tag = 4
	rt.System().Root.Send(sender, &Send{Frame: f})
	expect() // the route had its count: the frame waits in the stash
}
