package lazy

import (
	"bytes"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

// addrListener stands for a listener where hello reads only the address.
type addrListener struct {
	transport.Listener
	addr string
}

func (l addrListener) Addr() string { return l.addr }

// FuzzParseHello feeds arbitrary bytes to the parser of the hello a
// dialer sends, as member 1 of a group of 3. It must never panic, must
// accept only the hello of another member of its group, and whatever it
// accepts must be exactly what that member's hello encodes.
//
//	go test -run XXX -fuzz FuzzParseHello ./transport/lazy
func FuzzParseHello(f *testing.F) {
	const id = 0x5eed
	// parseHello reads only these fields; New would start an accept loop.
	g := &Group{id: id, members: 3, self: 1}
	dialer := func(self int, addr string) *Group {
		return &Group{id: id, self: self, ln: addrListener{addr: addr}}
	}
	valid := dialer(2, "10.0.0.2:29500").hello(7)
	f.Add(valid)
	f.Add(dialer(0, "").hello(1))
	f.Add(dialer(1, "self").hello(1))
	f.Add(dialer(3, "out of range").hello(1))
	f.Add(valid[:helloLen-1])
	corrupt := bytes.Clone(valid)
	corrupt[0] ^= 1
	f.Add(corrupt)

	f.Fuzz(func(t *testing.T, data []byte) {
		peer, gen, addr, ok := g.parseHello(data)
		if !ok {
			return
		}
		if peer < 0 || peer >= g.members || peer == g.self {
			t.Fatalf("hello %x accepted from member %d of %d, self %d", data, peer, g.members, g.self)
		}
		if again := dialer(peer, addr).hello(gen); !bytes.Equal(again, data) {
			t.Fatalf("hello %x accepted as member %d, generation %d, address %q, which encodes as %x", data, peer, gen, addr, again)
		}
	})
}
