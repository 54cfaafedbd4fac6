package transport_test

import (
	"context"
	"fmt"

	"github.com/gocomms/gocomms/transport"
)

// printer is a Handler that prints what arrives. A real handler posts to
// its actor's mailbox instead.
type printer string

func (p printer) HandleFrame(f transport.Frame) {
	fmt.Printf("%s: %v frame seq %d: %q\n", p, f.Header.Kind, f.Header.Seq, f.Payload)
	transport.PutBuffer(f.Payload)
}

func (p printer) HandleError(err error) { fmt.Printf("%s: %v\n", p, err) }

func ExampleInproc() {
	ctx := context.Background()
	nw := transport.NewInproc()
	l, _ := nw.Listen("")
	defer l.Close()

	dialer, _ := nw.Dial(ctx, l.Addr(), []byte("rank 1"))
	acceptor, hello, _ := l.Accept(ctx)
	fmt.Printf("accepted %s\n", hello)

	// Sent before Start: queued, then delivered by Start.
	payload := transport.GetBuffer(5)
	copy(payload, "hello")
	dialer.Send(transport.Frame{Header: transport.Header{Comm: 7, Kind: transport.PointToPoint, Seq: 1}, Payload: payload})
	acceptor.Start(printer("rank 0"))

	dialer.Close()
	// Output:
	// accepted rank 1
	// rank 0: point-to-point frame seq 1: "hello"
	// rank 0: transport: inproc conn inproc/1->inproc/2 closed by peer: transport: connection closed
}
