package transporttest

import (
	"sync/atomic"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

// BenchPingPong measures round trips of 8-byte frames on one connection of
// nw: each handler answers from inside HandleFrame, reusing the payload it
// was given, so ns/op is the time of one round trip and allocs/op what the
// transport allocates for it.
func BenchPingPong(b *testing.B, nw transport.Network) {
	d, a := connect(b, nw)
	done := make(chan struct{})
	var finished atomic.Bool
	var result error
	finish := func(err error) {
		if finished.CompareAndSwap(false, true) {
			result = err
			close(done)
		}
	}
	rounds := uint64(b.N)
	a.Start(handlerFunc{
		frame: func(f transport.Frame) {
			if err := a.Send(f); err != nil {
				finish(err)
			}
		},
		err: finish,
	})
	d.Start(handlerFunc{
		frame: func(f transport.Frame) {
			f.Header.Seq++
			if f.Header.Seq == rounds {
				transport.Release(f)
				finish(nil)
				return
			}
			if err := d.Send(f); err != nil {
				finish(err)
			}
		},
		err: finish,
	})
	b.ReportAllocs()
	b.ResetTimer()
	if err := d.Send(transport.Frame{Header: header(0, 0), Payload: seqPayload(0)}); err != nil {
		b.Fatalf("Send: %v", err)
	}
	<-done
	b.StopTimer()
	if result != nil {
		b.Fatalf("ping-pong failed: %v", result)
	}
}

// BenchStream measures one-way throughput of frames of size bytes on one
// connection of nw. The sender keeps at most window frames unacknowledged
// by the receiving handler, so transports that queue do not grow without
// bound; the receiver releases each payload as it arrives.
func BenchStream(b *testing.B, nw transport.Network, size int) {
	const window = 64
	d, a := connect(b, nw)
	credits := make(chan struct{}, window)
	var failure atomic.Pointer[error]
	a.Start(handlerFunc{
		frame: func(f transport.Frame) {
			transport.Release(f)
			credits <- struct{}{} // never blocks: the sender took it first
		},
		err: func(err error) {
			failure.CompareAndSwap(nil, &err)
			select {
			case credits <- struct{}{}: // wake a sender waiting for credit
			default:
			}
		},
	})
	for range window {
		credits <- struct{}{}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		<-credits
		if err := failure.Load(); err != nil {
			b.Fatalf("stream failed: %v", *err)
		}
		if err := d.Send(transport.Frame{Header: header(1, i), Payload: transport.GetBuffer(size)}); err != nil {
			b.Fatalf("Send: %v", err)
		}
	}
	for range window {
		<-credits
		if err := failure.Load(); err != nil {
			b.Fatalf("stream failed: %v", *err)
		}
	}
	b.StopTimer()
}

// handlerFunc adapts two funcs to a transport.Handler.
type handlerFunc struct {
	frame func(transport.Frame)
	err   func(error)
}

func (h handlerFunc) HandleFrame(f transport.Frame) { h.frame(f) }
func (h handlerFunc) HandleError(err error)         { h.err(err) }
