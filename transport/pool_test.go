package transport_test

import (
	"runtime"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/transport"
)

func TestBufferSizes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.OneOf(rapid.IntRange(-1, 300), rapid.IntRange(0, 1<<22)).Draw(t, "n")
		b := transport.GetBuffer(n)
		if len(b) != max(n, 0) || cap(b) < len(b) {
			t.Fatalf("GetBuffer(%d) has len %d cap %d", n, len(b), cap(b))
		}
		for i := range b {
			b[i] = byte(i) // all of it is writable
		}
		transport.PutBuffer(b)
		// Whatever the pool holds now must still satisfy any request.
		m := rapid.IntRange(0, 1<<22).Draw(t, "m")
		if c := transport.GetBuffer(m); len(c) != m || cap(c) < m {
			t.Fatalf("GetBuffer(%d) after a Put has len %d cap %d", m, len(c), cap(c))
		}
	})
}

func TestBufferPutForeign(t *testing.T) {
	// Slices not from the pool, tiny ones and odd capacities are accepted.
	for _, b := range [][]byte{nil, {}, make([]byte, 1), make([]byte, 100), make([]byte, 10, 5000)[3:7]} {
		transport.PutBuffer(b)
	}
	for _, n := range []int{1, 64, 100, 4096, 5000} {
		if b := transport.GetBuffer(n); len(b) != n || cap(b) < n {
			t.Fatalf("GetBuffer(%d) has len %d cap %d", n, len(b), cap(b))
		}
	}
}

func TestBufferNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	for _, n := range []int{8, 4096, 1 << 20} {
		transport.PutBuffer(transport.GetBuffer(n)) // warm the class
		allocs := testing.AllocsPerRun(1000, func() {
			transport.PutBuffer(transport.GetBuffer(n))
		})
		if allocs != 0 {
			t.Errorf("GetBuffer(%d)/PutBuffer allocates %v times", n, allocs)
		}
	}
}

// TestBufferReserveSurvivesGC: a large buffer put back is handed out again
// after garbage collections, which empty a sync.Pool.
func TestBufferReserveSurvivesGC(t *testing.T) {
	b := transport.GetBuffer(1 << 20)
	p := &b[:1][0]
	transport.PutBuffer(b)
	runtime.GC()
	runtime.GC()
	c := transport.GetBuffer(1 << 20)
	defer transport.PutBuffer(c)
	if &c[:1][0] != p {
		t.Fatal("a 1 MiB buffer did not survive two collections in the pool")
	}
}
