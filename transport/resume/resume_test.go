package resume_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/resume"
	"github.com/gocomms/gocomms/transport/transporttest"
)

// pipe is a pair of connections that deliver only when told to, and
// break on demand, losing whatever is still on the way: a TCP connection
// reset with frames in flight.
type pipe struct {
	ends   [2]*pipeEnd
	queues [2][]transport.Frame // to end i, oldest first
	broken bool
}

type pipeEnd struct {
	p    *pipe
	side int
	h    transport.Handler
}

func newPipe() *pipe {
	p := &pipe{}
	for i := range p.ends {
		p.ends[i] = &pipeEnd{p: p, side: i}
	}
	return p
}

func (e *pipeEnd) Send(f transport.Frame) error {
	if e.p.broken {
		transport.Release(f)
		return transport.ErrClosed
	}
	e.p.queues[1-e.side] = append(e.p.queues[1-e.side], f)
	return nil
}

func (e *pipeEnd) Start(h transport.Handler) { e.h = h }
func (e *pipeEnd) Close() error              { e.p.cut(); return nil }
func (e *pipeEnd) LocalAddr() string         { return "pipe" }
func (e *pipeEnd) RemoteAddr() string        { return "pipe" }

// deliver hands end i the oldest frame on its way, copying a lent payload
// as a socket would, and reports whether there was one.
func (p *pipe) deliver(i int) bool {
	if p.broken || len(p.queues[i]) == 0 || p.ends[i].h == nil {
		return false
	}
	f := p.queues[i][0]
	p.queues[i] = p.queues[i][1:]
	if f.Sent != nil {
		f = transport.Detach(f)
	}
	p.ends[i].h.HandleFrame(f)
	return true
}

// cut breaks the pipe: what is on the way is lost, and both ends hear.
func (p *pipe) cut() {
	if p.broken {
		return
	}
	p.broken = true
	for i := range p.queues {
		for _, f := range p.queues[i] {
			transport.Release(f)
		}
		p.queues[i] = nil
	}
	for _, e := range p.ends {
		if e.h != nil {
			e.h.HandleError(transport.ErrClosed)
		}
	}
}

// receiver records what a Conn delivers.
type receiver struct {
	got    []uint64
	breaks int
	err    error
}

func (r *receiver) HandleFrame(f transport.Frame) {
	r.got = append(r.got, binary.LittleEndian.Uint64(f.Payload))
	transport.Release(f)
}

func (r *receiver) HandleError(err error) {
	if errors.Is(err, resume.ErrBroken) {
		r.breaks++
		return
	}
	r.err = err
}

// TestResumeLosesNothing sends frames both ways between two Conns over
// pipes that break at drawn moments with frames on the way, resuming on
// a new pipe each time: each side receives every frame the other sent,
// once and in order, and every lent payload goes back to its sender
// exactly once, when no lock is held.
func TestResumeLosesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := newPipe()
		var conns [2]*resume.Conn
		var recv [2]receiver
		for i := range conns {
			conns[i] = resume.New(7, p.ends[i])
			conns[i].Start(&recv[i])
		}
		var sent [2]uint64
		lentBack := map[uint64]int{}
		lent := 0
		resumeBoth := func() {
			p = newPipe()
			for i := range conns {
				conns[i].Resume(p.ends[i])
			}
		}
		for range rapid.IntRange(0, 300).Draw(t, "steps") {
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
			case op < 4: // a side sends
				i := op % 2
				sent[i]++
				id := sent[i] | uint64(i)<<62
				f := transport.Frame{Header: transport.Header{Comm: 7, Kind: transport.Collective, Seq: id}, Payload: binary.LittleEndian.AppendUint64(transport.GetBuffer(0), id)}
				if rapid.Bool().Draw(t, "lent") {
					lent++
					f.Payload = binary.LittleEndian.AppendUint64(nil, id)
					// Its lender may call into the Conn: Sent comes with no
					// lock held.
					f.Sent = func() { lentBack[id]++; conns[i].Lending() }
				}
				if err := conns[i].Send(f); err != nil {
					t.Fatalf("send: %v", err)
				}
			case op < 8: // a frame arrives
				p.deliver(op % 2)
			case op == 8: // the connection resets
				p.cut()
			default: // both sides reconnect
				if p.broken {
					resumeBoth()
				}
			}
		}
		if p.broken {
			resumeBoth()
		}
		for p.deliver(0) || p.deliver(1) {
		}
		for i := range recv {
			if recv[i].err != nil {
				t.Fatalf("side %d ended: %v", i, recv[i].err)
			}
			other := 1 - i
			if uint64(len(recv[i].got)) != sent[other] {
				t.Fatalf("side %d received %d frames of %d", i, len(recv[i].got), sent[other])
			}
			for k, id := range recv[i].got {
				if want := uint64(k+1) | uint64(other)<<62; id != want {
					t.Fatalf("side %d's frame %d is %x, want %x", i, k, id, want)
				}
			}
		}
		for i := range conns {
			if conns[i].Lending() {
				t.Fatalf("side %d still lends once everything arrived and was acknowledged", i)
			}
			conns[i].Close()
		}
		if len(lentBack) != lent {
			t.Fatalf("%d of %d lent payloads given back", len(lentBack), lent)
		}
		for id, n := range lentBack {
			if n != 1 {
				t.Fatalf("lent payload %x given back %d times", id, n)
			}
		}
	})
}

// TestPeerThatContradictsTheCountsEndsTheConn: an acknowledgement of
// more than was sent, or of fewer than acknowledged before, or a frame of
// the Conn's own kind it does not know, says the peer lost its state or
// speaks another protocol: the Conn ends, telling its handler why, and
// gives back what it kept.
func TestPeerThatContradictsTheCountsEndsTheConn(t *testing.T) {
	for _, tc := range []struct {
		name string
		own  transport.Header // what the peer sends, after acknowledging 1 of 2 frames
	}{
		{"beyond what was sent", transport.Header{Comm: 7, Kind: resume.Kind, Tag: 1, Seq: 3}},
		{"backwards", transport.Header{Comm: 7, Kind: resume.Kind, Tag: 1, Seq: 0}},
		{"unknown tag", transport.Header{Comm: 7, Kind: resume.Kind, Tag: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipe()
			c := resume.New(7, p.ends[0])
			var r receiver
			c.Start(&r)
			var peer receiver
			p.ends[1].Start(&peer)
			back := 0
			for range 2 {
				f := transport.Frame{Header: transport.Header{Comm: 7, Kind: transport.Collective}, Payload: make([]byte, 8), Sent: func() { back++ }}
				if err := c.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			p.ends[1].Send(transport.Frame{Header: transport.Header{Comm: 7, Kind: resume.Kind, Tag: 1, Seq: 1}})
			p.ends[1].Send(transport.Frame{Header: tc.own})
			for p.deliver(0) {
			}
			if r.err == nil || !errors.Is(r.err, transport.ErrClosed) {
				t.Fatalf("the handler was told %v, want an end wrapping ErrClosed", r.err)
			}
			if back != 2 {
				t.Errorf("%d of 2 lent payloads given back", back)
			}
			if err := c.Send(transport.Frame{}); err == nil {
				t.Error("a Send after the end was taken")
			}
		})
	}
}

// TestLosslessConnectionEndsTheConn: over a connection that is lossless
// itself, frames go unnumbered and nothing is kept, so its end is the
// Conn's, not a break to resume from.
func TestLosslessConnectionEndsTheConn(t *testing.T) {
	nw := transport.NewInproc()
	l, err := nw.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	under, err := nw.Dial(t.Context(), l.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	peer, _, err := l.Accept(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := resume.New(7, under)
	mine, theirs := transporttest.NewRecorder(), transporttest.NewRecorder()
	c.Start(mine)
	peer.Start(theirs)
	if err := c.Send(transport.Frame{Header: transport.Header{Comm: 7, Kind: transport.Collective, Seq: 5}}); err != nil {
		t.Fatal(err)
	}
	if f := theirs.WaitFrames(t, 1)[0]; f.Header.Kind&^0x20 != transport.Collective || f.Header.Kind == transport.Collective {
		t.Errorf("frame on the wire has kind %#x: want Collective flagged unnumbered", f.Header.Kind)
	}
	peer.Close()
	if _, err := mine.WaitError(t); errors.Is(err, resume.ErrBroken) {
		t.Errorf("the end of a lossless connection was told as a break: %v", err)
	}
	if c.Lossless() {
		t.Error("the Conn still says it is lossless once ended")
	}
}
