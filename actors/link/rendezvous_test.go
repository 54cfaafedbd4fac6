package link

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/resume"
)

// frameChan is a transport.Handler that passes frames on a channel.
type frameChan chan transport.Frame

func (c frameChan) HandleFrame(f transport.Frame) { c <- f }
func (c frameChan) HandleError(error)             {}

// connectedPlane returns a plane to peer 1 whose connection is an
// in-process one, and the channel the peer's end delivers on.
func connectedPlane(t *testing.T) (*Plane, frameChan) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nw := transport.NewInproc()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	dialed := make(chan transport.Conn, 1)
	go func() {
		c, err := nw.Dial(ctx, l.Addr(), nil)
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	peer, _, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(frameChan, 16)
	peer.Start(got)
	rc := resume.New(1, <-dialed)
	rc.Start(frameChan(make(chan transport.Frame, 16)))
	t.Cleanup(func() { rc.Close(); peer.Close() })
	p := NewPlane(1)
	p.connected(rc)
	return p, got
}

// doneChan records an offer's end.
type doneChan chan error

func (d doneChan) done(err error) { d <- err }

// ends waits for an offer's end, failing t if none comes.
func (d doneChan) ends(t *testing.T) error {
	t.Helper()
	select {
	case err := <-d:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the offer never ended")
		return nil
	}
}

func (d doneChan) pending(t *testing.T) {
	t.Helper()
	select {
	case err := <-d:
		t.Fatalf("the offer ended (%v) before its receiver cleared it", err)
	default:
	}
}

// TestOfferGoesOnceCleared: an offered message waits at its sender until
// the receiver's clearance comes, goes then, data and all, and ends once
// the connection gives its memory back.
func TestOfferGoesOnceCleared(t *testing.T) {
	p, peer := connectedPlane(t)
	h := transport.Header{Kind: transport.PointToPoint, Seq: 3, Tag: 9}
	data := bytes.Repeat([]byte{7}, 1<<16)
	d := make(doneChan, 1)
	p.Offer(h, data, d.done)
	d.pending(t)
	if n, ok := AnnouncedLength(Announcement(h, len(data)).Payload); !ok || n != len(data) {
		t.Fatalf("announced length %d (%v), want %d", n, ok, len(data))
	}
	other := h
	other.Seq = 4
	p.arrive(Clearance(other)) // not the one offered: dropped
	d.pending(t)
	p.arrive(Clearance(Announcement(h, len(data)).Header))
	if err := d.ends(t); err != nil {
		t.Fatalf("offer ended with %v", err)
	}
	f := <-peer
	if f.Header.Seq != h.Seq || f.Header.Tag != h.Tag || !bytes.Equal(f.Payload, data) {
		t.Fatalf("the peer got %+v with %d bytes, want the message offered", f.Header, len(f.Payload))
	}
	p.arrive(Clearance(h)) // again: the offer went already
	nothingBefore(t, p, peer)
}

// nothingBefore sends a marker frame on p and checks that it is the
// next frame the peer gets: the connection keeps order, so nothing else
// went since the last frame taken.
func nothingBefore(t *testing.T, p *Plane, peer frameChan) {
	t.Helper()
	marker := transport.Header{Kind: transport.Control, Seq: 99}
	if err := p.Send(transport.Frame{Header: marker}); err != nil {
		t.Fatal(err)
	}
	if f := <-peer; f.Header.Seq != marker.Seq || f.Header.Tag != marker.Tag {
		t.Fatalf("the peer got %+v before the marker", f.Header)
	}
}

// TestOfferEndsWithoutGoing: an offer taken back, or on a link that
// failed, ends with the error, once; a clearance after it sends nothing.
func TestOfferEndsWithoutGoing(t *testing.T) {
	p, peer := connectedPlane(t)
	h := transport.Header{Kind: transport.PointToPoint, Seq: 1, Tag: 2}
	d := make(doneChan, 2)
	p.Offer(h, make([]byte, 8), d.done)
	withdrawn := errors.New("withdrawn")
	p.Withdraw(h, withdrawn)
	p.Withdraw(h, withdrawn)
	if err := d.ends(t); !errors.Is(err, withdrawn) {
		t.Fatalf("withdrawn offer ended with %v", err)
	}
	p.arrive(Clearance(h))
	nothingBefore(t, p, peer)

	h.Seq = 2
	p.Offer(h, make([]byte, 8), d.done)
	failed := errors.New("link failed")
	p.fail(failed)
	if err := d.ends(t); !errors.Is(err, failed) {
		t.Fatalf("offer on a failed link ended with %v", err)
	}
	h.Seq = 3
	p.Offer(h, make([]byte, 8), d.done)
	if err := d.ends(t); !errors.Is(err, failed) {
		t.Fatalf("offer after the link failed ended with %v", err)
	}
	d.pending(t)
}

// TestSendAfterFailureSaysThePeerLeft: a send on a plane whose link
// failed after the peer said goodbye fails with the link's error, which
// says the peer left (a mismatch for the collective), not that the plane
// has no connection.
func TestSendAfterFailureSaysThePeerLeft(t *testing.T) {
	p, _ := connectedPlane(t)
	p.saidBye(1 + 3)
	p.fail(errors.New("connection closed"))
	err := p.Send(transport.Frame{Header: transport.Header{Kind: transport.Collective, Seq: 5}})
	var left *PeerLeft
	if !errors.As(err, &left) || left.Collectives != 3 {
		t.Fatalf("send after the peer left: %v, want a PeerLeft after 3 collectives", err)
	}
	q := NewPlane(2) // never connected
	if err := q.Send(transport.Frame{}); !errors.Is(err, ErrNotDirect) {
		t.Fatalf("send on a plane never connected: %v, want ErrNotDirect", err)
	}
}
