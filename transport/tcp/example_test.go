package tcp_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
)

// chanHandler posts what arrives into channels, as a link actor posts into
// its mailbox.
type chanHandler struct {
	frames chan transport.Frame
	errs   chan error
}

func (h chanHandler) HandleFrame(f transport.Frame) { h.frames <- f }
func (h chanHandler) HandleError(err error)         { h.errs <- err }

func Example() {
	nw := tcp.New(tcp.WithListenHost("127.0.0.1"))
	l, err := nw.Listen("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	ctx := context.Background()
	d, err := nw.Dial(ctx, l.Addr(), []byte("rank 1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, hello, err := l.Accept(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()

	h := chanHandler{frames: make(chan transport.Frame, 1), errs: make(chan error, 1)}
	a.Start(h)
	payload := transport.GetBuffer(5)
	copy(payload, "hello")
	d.Send(transport.Frame{Header: transport.Header{Comm: 1, Kind: transport.Collective, Seq: 42}, Payload: payload})
	d.Close()

	f := <-h.frames
	fmt.Printf("from %s: seq %d %q\n", hello, f.Header.Seq, f.Payload)
	transport.PutBuffer(f.Payload)
	fmt.Println("then closed:", errors.Is(<-h.errs, transport.ErrClosed))
	// Output:
	// from rank 1: seq 42 "hello"
	// then closed: true
}
