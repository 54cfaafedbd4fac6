package tcpstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store/tcpstore"
)

// clientsOfBoth dials n clients of srv, alternating the dialects.
func clientsOfBoth(t *testing.T, srv *tcpstore.Server, n int) []*tcpstore.Client {
	clients := make([]*tcpstore.Client, n)
	for i := range clients {
		v := []tcpstore.Version{tcpstore.Version1, tcpstore.Version2}[i%2]
		clients[i] = dial(t, srv.Addr().String(), tcpstore.WithVersion(v))
	}
	return clients
}

// TestRendezvous: ranks on many clients publish themselves and wait for
// everyone, the waits woken by other clients' writes.
func TestRendezvous(t *testing.T) {
	const ranks = 32
	srv := startServer(t)
	clients := clientsOfBoth(t, srv, 8)
	ctx := testContext(t)
	keys := make([]string, ranks)
	for i := range keys {
		keys[i] = fmt.Sprintf("rank/%d", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, ranks)
	for i := range ranks {
		c := clients[i%len(clients)]
		wg.Go(func() {
			if _, err := c.Add(ctx, "joined", 1); err != nil {
				errs <- err
				return
			}
			if err := c.Set(ctx, keys[i], []byte(strconv.Itoa(i))); err != nil {
				errs <- err
				return
			}
			vs, err := c.MultiGet(ctx, keys...)
			if err != nil {
				errs <- err
				return
			}
			for j, v := range vs {
				if string(v) != strconv.Itoa(j) {
					errs <- fmt.Errorf("rank %d read %q for rank %d", i, v, j)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, err := clients[0].Add(ctx, "joined", 0); err != nil || n != ranks {
		t.Errorf("joined = %d, %v; want %d", n, err, ranks)
	}
}

// TestRelay: each goroutine waits for its turn and hands it on, so every
// wait is released by a write from another client.
func TestRelay(t *testing.T) {
	const hops = 64
	srv := startServer(t)
	clients := clientsOfBoth(t, srv, 4)
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make(chan error, hops)
	for i := range hops {
		c := clients[i%len(clients)]
		wg.Go(func() {
			v, err := c.Get(ctx, fmt.Sprintf("turn/%d", i))
			if err == nil {
				err = c.Append(ctx, fmt.Sprintf("turn/%d", i+1), append(v, '.'))
			}
			if err != nil {
				errs <- err
			}
		})
	}
	if err := clients[1].Set(ctx, "turn/0", nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if v, err := clients[2].Get(ctx, fmt.Sprintf("turn/%d", hops)); err != nil || len(v) != hops {
		t.Errorf("the last turn carries %d dots, %v; want %d", len(v), err, hops)
	}
}

// TestWaitTimeoutsRaceSets: waits that time out while the key is being
// set either succeed or report the deadline, and leave their connections
// fit: CANCEL_WAIT in 2.x, a fresh connection in 1.x.
func TestWaitTimeoutsRaceSets(t *testing.T) {
	srv := startServer(t)
	clients := clientsOfBoth(t, srv, 4)
	ctx := testContext(t)
	var wg sync.WaitGroup
	var timeouts atomic.Int64
	errs := make(chan error, 64)
	for i := range 16 {
		c := clients[i%len(clients)]
		wg.Go(func() {
			for j := 0; ; j++ {
				short, cancel := context.WithTimeout(ctx, time.Duration(j%3)*time.Millisecond)
				err := c.Wait(short, "flag")
				cancel()
				if err == nil {
					break
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					errs <- err
					return
				}
				timeouts.Add(1)
			}
			// Replies still line up on every connection.
			if n, err := c.Add(ctx, fmt.Sprintf("n/%d", i), 7); err != nil || n != 7 {
				errs <- fmt.Errorf("Add after racing waits = %d, %v", n, err)
			}
		})
	}
	waitFor(t, func() bool { return timeouts.Load() >= 200 })
	if err := clients[3].Set(ctx, "flag", nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := tcpstore.Registrations(srv); n != 0 {
		t.Errorf("%d registrations left", n)
	}
}

// TestServerCloseReleasesClients: closing the server fails waiting calls
// instead of leaving them blocked.
func TestServerCloseReleasesClients(t *testing.T) {
	srv, err := tcpstore.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.Addr().String(), tcpstore.WithTimeout(time.Second))
	ctx := testContext(t)
	done := make(chan error, 1)
	go func() { done <- c.Wait(ctx, "never") }()
	waitFor(t, func() bool { return tcpstore.Registrations(srv) == 1 })
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Error("a wait survived the server's Close")
	}
}
