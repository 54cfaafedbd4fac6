package actors

import (
	"sync"
	"testing"
	"time"
)

// TestPoolNeverQueuesBehindABusyWorker starts more turns than there are
// workers, each blocking until all have started: they can only all start
// if none waits for a worker to free up.
func TestPoolNeverQueuesBehindABusyWorker(t *testing.T) {
	p := newPool()
	defer p.stop()
	const turns = 64
	var started sync.WaitGroup
	started.Add(turns)
	release := make(chan struct{})
	for range turns {
		p.Schedule(func() {
			started.Done()
			<-release
		})
	}
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatal("turns waited behind blocked workers")
	}
	close(release)
}

func TestPoolRunsTurnsAfterStop(t *testing.T) {
	p := newPool()
	p.stop()
	p.stop() // twice is harmless
	ran := make(chan struct{})
	p.Schedule(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a turn scheduled after stop never ran")
	}
}
