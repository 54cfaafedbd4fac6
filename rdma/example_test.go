package rdma_test

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/gocomms/gocomms/rdma"
)

// Two transports in one process stand for a trainer and an inference
// server in two: the trainer writes weights into the server's registered
// memory and notifies it, bumps a version counter there with an atomic,
// and reads the weights back.
func Example() {
	ctx := context.Background()
	trainer, err := rdma.New(rdma.WithListenHost("127.0.0.1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer trainer.Close()
	server, err := rdma.New(rdma.WithListenHost("127.0.0.1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer server.Close()

	// Both bind, exchange addresses out of band, and connect to each other.
	trainerAddr, _ := trainer.Bind()
	serverAddr, _ := server.Bind()
	if err := trainer.Connect(ctx, serverAddr); err != nil {
		fmt.Println(err)
		return
	}
	if err := server.Connect(ctx, trainerAddr); err != nil {
		fmt.Println(err)
		return
	}

	// The server registers its memory and publishes the handles.
	weights := []byte("weights: ...........")
	wm, _ := rdma.Register(weights)
	defer wm.Deregister()
	version := make([]byte, 8) // one 8-byte word, aligned as Go aligns it
	vm, _ := rdma.Register(version)
	defer vm.Deregister()
	handle, _ := wm.Remote().MarshalBinary()

	// The trainer writes into part of the buffer, from part of its own.
	var remote rdma.RemoteBuffer
	if err := remote.UnmarshalBinary(handle); err != nil {
		fmt.Println(err)
		return
	}
	src, _ := rdma.Register([]byte("the new weights"))
	defer src.Deregister()
	from, _ := src.View(4, 11)
	to, _ := remote.Slice(9, 11)
	if err := trainer.Write(ctx, from, to, true); err != nil {
		fmt.Println(err)
		return
	}
	old, err := trainer.FetchAdd(ctx, vm.Remote(), 1)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The server learns that the write has landed.
	if err := server.WaitForWrite(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("server has %q, version %d -> %d\n", weights, old, binary.NativeEndian.Uint64(version))

	// The trainer reads the whole buffer back.
	mirror := make([]byte, remote.Len)
	mm, _ := rdma.Register(mirror)
	defer mm.Deregister()
	into, _ := mm.MutableView(0, len(mirror))
	if err := trainer.Read(ctx, into, remote); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("trainer reads %q\n", mirror)
	// Output:
	// server has "weights: new weights", version 0 -> 1
	// trainer reads "weights: new weights"
}
