package tcpstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gocomms/gocomms/store/tcpstore"
)

func Example() {
	ctx := context.Background()
	// Rank 0 hosts the store; PyTorch processes may connect to it too.
	srv, err := tcpstore.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// Every rank dials it. Dial retries until the server is up, and finds
	// which protocol version it speaks.
	s, err := tcpstore.Dial(ctx, srv.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	s.Set(ctx, "/rank/0", []byte("10.0.0.1:29500"))
	n, _ := s.Add(ctx, "/joined", 1)
	addr, _ := s.Get(ctx, "/rank/0") // waits until the key exists
	fmt.Println(s.Version(), n, string(addr))
	// Output: 2.x 1 10.0.0.1:29500
}
