package transport_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/transport"
)

// seqHandler records the Seq of each frame; Inproc delivers in the caller's
// goroutine, so the model can compare after every step.
type seqHandler struct {
	seqs []uint64
	errs []error
}

func (h *seqHandler) HandleFrame(f transport.Frame) {
	if len(h.errs) > 0 {
		panic("frame after HandleError")
	}
	h.seqs = append(h.seqs, f.Header.Seq)
	transport.PutBuffer(f.Payload)
}

func (h *seqHandler) HandleError(err error) { h.errs = append(h.errs, err) }

// endModel is the reference for one end of an Inproc connection, driven by a
// single goroutine: what it has been delivered, what waits for Start, and
// whether it has been told the connection ended.
type endModel struct {
	started, closed bool
	queued          []uint64
	delivered       []uint64
}

// TestInprocModel drives both ends of a connection with random Send, Start
// and Close steps and compares every handler with a plain model after each.
func TestInprocModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nw := transport.NewInproc()
		l, err := nw.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		d, err := nw.Dial(context.Background(), l.Addr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		a, _, err := l.Accept(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns := [2]transport.Conn{d, a}
		handlers := [2]*seqHandler{{}, {}}
		var model [2]endModel
		var seq uint64

		end := rapid.IntRange(0, 1)
		t.Repeat(map[string]func(*rapid.T){
			"send": func(t *rapid.T) {
				from := end.Draw(t, "from")
				to := 1 - from
				seq++
				err := conns[from].Send(transport.Frame{Header: transport.Header{Seq: seq}, Payload: transport.GetBuffer(rapid.IntRange(0, 300).Draw(t, "size"))})
				if model[from].closed || model[to].closed {
					if !errors.Is(err, transport.ErrClosed) {
						t.Fatalf("Send on a closed connection returned %v", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				if model[to].started {
					model[to].delivered = append(model[to].delivered, seq)
				} else {
					model[to].queued = append(model[to].queued, seq)
				}
			},
			"start": func(t *rapid.T) {
				e := end.Draw(t, "end")
				conns[e].Start(handlers[e])
				if !model[e].started {
					model[e].started = true
					model[e].delivered = append(model[e].delivered, model[e].queued...)
					model[e].queued = nil
				}
			},
			"close": func(t *rapid.T) {
				e := end.Draw(t, "end")
				if err := conns[e].Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				model[e].closed = true
				model[e].queued = nil // undelivered frames are dropped
			},
			"": func(t *rapid.T) {
				for e, h := range handlers {
					m := model[e]
					if !slices.Equal(h.seqs, m.delivered) {
						t.Fatalf("end %d delivered %v, want %v", e, h.seqs, m.delivered)
					}
					wantErrs := 0
					if m.started && (model[0].closed || model[1].closed) {
						wantErrs = 1
					}
					if len(h.errs) != wantErrs {
						t.Fatalf("end %d got errors %v, want %d", e, h.errs, wantErrs)
					}
					for _, err := range h.errs {
						if !errors.Is(err, transport.ErrClosed) {
							t.Fatalf("end %d got %v, want ErrClosed", e, err)
						}
					}
				}
			},
		})
	})
}
