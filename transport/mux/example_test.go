package mux_test

import (
	"context"
	"fmt"

	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/mux"
)

// printer is a Handler that prints what arrives. A real handler posts to
// its actor's mailbox instead.
type printer string

func (p printer) HandleFrame(f transport.Frame) {
	fmt.Printf("%s: comm %#x: %q\n", p, f.Header.Comm, f.Payload)
	transport.PutBuffer(f.Payload)
}

func (p printer) HandleError(err error) { fmt.Printf("%s: %v\n", p, err) }

func Example() {
	ctx := context.Background()
	nw := transport.NewInproc()
	l, _ := nw.Listen("")
	defer l.Close()
	dialed, _ := nw.Dial(ctx, l.Addr(), nil)
	accepted, _, _ := l.Accept(ctx)
	a, b := mux.New(dialed), mux.New(accepted)
	defer a.Close()

	// A communicator and one split from it share the connection.
	const parent, child = 0x51, 0x52
	send := func(c transport.Conn, comm uint64, text string) {
		p := transport.GetBuffer(len(text))
		copy(p, text)
		c.Send(transport.Frame{Header: transport.Header{Comm: comm, Kind: transport.Collective}, Payload: p})
	}
	ap, _ := a.Open(parent)
	ac, _ := a.Open(child)
	send(ac, child, "to the child") // held until the other end opens the child
	send(ap, parent, "to the parent")
	ac.Close()

	bp, _ := b.Open(parent)
	bp.Start(printer("parent"))
	bc, _ := b.Open(child)
	bc.Start(printer("child"))
	b.Close() // ends every comm on the connection
	// Output:
	// parent: comm 0x51: "to the parent"
	// child: comm 0x52: "to the child"
	// child: transport/mux: comm 0x52 on connection inproc/1->inproc/2 closed by peer: transport: connection closed
	// parent: transport/mux: connection inproc/1->inproc/2 closed locally: transport: connection closed
}
