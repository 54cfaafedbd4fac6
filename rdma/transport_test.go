package rdma

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// randomBytes returns n bytes from a source seeded by the test's name, so
// that a failure replays.
func randomBytes(t testing.TB, n int, salt uint64) []byte {
	h := uint64(0)
	for _, c := range t.Name() {
		h = h*31 + uint64(c)
	}
	r := rand.New(rand.NewPCG(h, salt))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestWriteReadBothWays moves bytes in all four ways between two
// transports: each writes into the other's memory and reads from it.
func TestWriteReadBothWays(t *testing.T) {
	a, b := newPair(t)
	ctx := testContext(t)
	const n = 300_000 // several reads' and writes' worth of socket buffer
	for _, dir := range []struct {
		name     string
		from, to *Transport
	}{{"a to b", a, b}, {"b to a", b, a}} {
		t.Run(dir.name, func(t *testing.T) {
			want := randomBytes(t, n, 1)
			src := register(t, bytes.Clone(want))
			dst := register(t, make([]byte, n))
			back := register(t, make([]byte, n))
			if err := dir.from.Write(ctx, view(t, src, 0, n), dst.Remote(), false); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst.buf, want) {
				t.Fatalf("after Write, the peer's memory differs from the source")
			}
			if err := dir.from.Read(ctx, mutableView(t, back, 0, n), dst.Remote()); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.buf, want) {
				t.Fatalf("Read returned other bytes than were written")
			}
			// The peer's owner changes its memory; a read sees the change.
			copy(dst.buf[1000:], "changed by its owner")
			if err := dir.from.Read(ctx, mutableView(t, back, 0, n), dst.Remote()); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.buf, dst.buf) {
				t.Fatalf("Read missed the owner's change")
			}
		})
	}
}

// TestOffsets writes and reads parts of buffers at offsets through views
// and slices, and checks that nothing outside the range changes.
func TestOffsets(t *testing.T) {
	a, _ := newPair(t)
	ctx := testContext(t)
	const size = 4096
	src := register(t, randomBytes(t, size, 1))
	for _, c := range []struct{ localOff, remoteOff, n int }{
		{0, 0, 1}, {1, 0, 7}, {0, 1, 8}, {13, 4000, 96}, {size - 5, 0, 5}, {100, 2048, 2048}, {7, 9, 0},
	} {
		t.Run(fmt.Sprintf("%d->%d+%d", c.localOff, c.remoteOff, c.n), func(t *testing.T) {
			orig := randomBytes(t, size, 2)
			dst := register(t, bytes.Clone(orig))
			remote := slice(t, dst.Remote(), uint64(c.remoteOff), uint64(c.n))
			if err := a.Write(ctx, view(t, src, c.localOff, c.n), remote, false); err != nil {
				t.Fatal(err)
			}
			want := bytes.Clone(orig)
			copy(want[c.remoteOff:], src.buf[c.localOff:c.localOff+c.n])
			if !bytes.Equal(dst.buf, want) {
				t.Fatalf("peer's memory after the write differs from the expected in %d bytes", diff(dst.buf, want))
			}

			got := register(t, bytes.Clone(orig))
			if err := a.Read(ctx, mutableView(t, got, c.localOff, c.n), remote); err != nil {
				t.Fatal(err)
			}
			want = bytes.Clone(orig)
			copy(want[c.localOff:], dst.buf[c.remoteOff:c.remoteOff+c.n])
			if !bytes.Equal(got.buf, want) {
				t.Fatalf("local memory after the read differs from the expected in %d bytes", diff(got.buf, want))
			}
		})
	}
}

func diff(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// TestHandlesRoundTrip sends both handles through their byte forms, as
// they would cross processes, and uses what comes out.
func TestHandlesRoundTrip(t *testing.T) {
	ctx := testContext(t)
	a, b := newBound(t), newBound(t)
	for _, p := range [][2]*Transport{{a, b}, {b, a}} {
		addr, _ := p[1].Bind()
		wire := bytes.Clone(addr) // what a store would hand back
		if err := p[0].Connect(ctx, Address(wire)); err != nil {
			t.Fatal(err)
		}
	}
	dst := register(t, make([]byte, 64))
	wire, err := dst.Remote().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var remote RemoteBuffer
	if err := remote.UnmarshalBinary(wire); err != nil {
		t.Fatal(err)
	}
	if remote != dst.Remote() {
		t.Fatalf("handle %v came back as %v", dst.Remote(), remote)
	}
	part := slice(t, remote, 32, 32)
	src := register(t, []byte(strings.Repeat("x", 32)))
	if err := a.Write(ctx, view(t, src, 0, 32), part, false); err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("\x00", 32) + strings.Repeat("x", 32); string(dst.buf) != want {
		t.Fatalf("memory is %q, want %q", dst.buf, want)
	}
}

// TestNotify checks WaitForWrite's counting: notifying writes before the
// waits, waits before the writes, and writes that do not notify.
func TestNotify(t *testing.T) {
	a, b := newPair(t)
	ctx := testContext(t)
	src := register(t, []byte("12345678"))
	dst := register(t, make([]byte, 8*10))
	write := func(i int, notify bool) {
		t.Helper()
		if err := a.Write(ctx, view(t, src, 0, 8), slice(t, dst.Remote(), uint64(8*i), 8), notify); err != nil {
			t.Fatal(err)
		}
	}
	noneLeft := func() {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if err := b.WaitForWrite(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitForWrite with no notification left: %v, want a deadline error", err)
		}
	}

	t.Run("writes then waits", func(t *testing.T) {
		for i := range 3 {
			write(i, true)
		}
		write(3, false)
		for range 3 {
			if err := b.WaitForWrite(ctx); err != nil {
				t.Fatal(err)
			}
		}
		noneLeft()
	})
	t.Run("waits then writes", func(t *testing.T) {
		const waits = 4
		var started, finished sync.WaitGroup
		errs := make(chan error, waits)
		for range waits {
			started.Add(1)
			finished.Add(1)
			go func() {
				defer finished.Done()
				started.Done()
				errs <- b.WaitForWrite(ctx)
			}()
		}
		started.Wait()
		for i := range waits {
			write(i, true)
		}
		finished.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		noneLeft()
	})
	t.Run("notification after the data", func(t *testing.T) {
		// B sees the written bytes once its wait returns; under -race this
		// also checks that the responder's write happens before it.
		done := make(chan []byte)
		go func() {
			if err := b.WaitForWrite(ctx); err != nil {
				t.Error(err)
			}
			done <- bytes.Clone(dst.buf[72:80])
		}()
		write(9, true)
		if got := <-done; string(got) != "12345678" {
			t.Fatalf("after WaitForWrite the memory holds %q", got)
		}
	})
	t.Run("zero-length notification", func(t *testing.T) {
		empty := register(t, []byte{})
		if err := a.Write(ctx, view(t, empty, 0, 0), slice(t, dst.Remote(), 80, 0), true); err != nil {
			t.Fatal(err)
		}
		if err := b.WaitForWrite(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("failed writes do not notify", func(t *testing.T) {
		gone := register(t, make([]byte, 8))
		remote := gone.Remote()
		gone.Deregister()
		if err := a.Write(ctx, view(t, src, 0, 8), remote, true); !errors.Is(err, ErrUnregistered) {
			t.Fatalf("write to a deregistered key: %v", err)
		}
		noneLeft()
	})
}

// TestAtomics checks fetch-add and compare-and-swap results against what
// the word must hold.
func TestAtomics(t *testing.T) {
	a, b := newPair(t)
	ctx := testContext(t)
	mem := register(t, alignedBytes(64))
	word := func(i uint64) RemoteBuffer { return slice(t, mem.Remote(), 8*i, 8) }

	t.Run("concurrent fetch-add", func(t *testing.T) {
		const goroutines, each, add = 8, 200, 3
		olds := make(chan uint64, goroutines*each)
		var wg sync.WaitGroup
		for g := range goroutines {
			from := a
			if g%2 == 1 {
				from = b // served by a's responder: the registry is the process's, so both reach the word
			}
			wg.Go(func() {
				for range each {
					old, err := from.FetchAdd(ctx, word(0), add)
					if err != nil {
						t.Error(err)
						return
					}
					olds <- old
				}
			})
		}
		wg.Wait()
		close(olds)
		seen := make(map[uint64]bool)
		for old := range olds {
			if old%add != 0 || seen[old] {
				t.Fatalf("fetch-add returned %d, seen before or not a multiple of %d", old, add)
			}
			seen[old] = true
		}
		if got, want := nativeWord(mem.buf[0:8]), uint64(goroutines*each*add); got != want || len(seen) != goroutines*each {
			t.Fatalf("word is %d after %d fetch-adds of %d (%d distinct old values), want %d", got, goroutines*each, add, len(seen), want)
		}
	})
	t.Run("compare-and-swap", func(t *testing.T) {
		putNativeWord(mem.buf[8:16], 41)
		old, err := a.CompareAndSwap(ctx, word(1), 40, 99)
		if err != nil || old != 41 || nativeWord(mem.buf[8:16]) != 41 {
			t.Fatalf("failing CAS: old %d, err %v, word now %d; want 41, nil, 41", old, err, nativeWord(mem.buf[8:16]))
		}
		old, err = a.CompareAndSwap(ctx, word(1), 41, 99)
		if err != nil || old != 41 || nativeWord(mem.buf[8:16]) != 99 {
			t.Fatalf("succeeding CAS: old %d, err %v, word now %d; want 41, nil, 99", old, err, nativeWord(mem.buf[8:16]))
		}
	})
	t.Run("wraps around", func(t *testing.T) {
		putNativeWord(mem.buf[16:24], 1<<64-2)
		if old, err := a.FetchAdd(ctx, word(2), 5); err != nil || old != 1<<64-2 || nativeWord(mem.buf[16:24]) != 3 {
			t.Fatalf("fetch-add over the top: old %d, err %v, word %d", old, err, nativeWord(mem.buf[16:24]))
		}
	})
	t.Run("bounds", func(t *testing.T) {
		for _, r := range []RemoteBuffer{
			slice(t, mem.Remote(), 4, 8),  // misaligned
			slice(t, mem.Remote(), 8, 4),  // short
			slice(t, mem.Remote(), 8, 16), // long
		} {
			before := bytes.Clone(mem.buf)
			if _, err := a.FetchAdd(ctx, r, 1); !errors.Is(err, ErrBounds) {
				t.Errorf("fetch-add on %v: %v, want ErrBounds", r, err)
			}
			if _, err := a.CompareAndSwap(ctx, r, 0, 1); !errors.Is(err, ErrBounds) {
				t.Errorf("compare-and-swap on %v: %v, want ErrBounds", r, err)
			}
			if !bytes.Equal(before, mem.buf) {
				t.Errorf("a refused atomic on %v changed memory", r)
			}
		}
		// Past the registration: refused by the peer.
		beyond := RemoteBuffer{Addr: mem.Remote().Addr + 64, Len: 8, Key: mem.Remote().Key}
		if _, err := a.FetchAdd(ctx, beyond, 1); !errors.Is(err, ErrBounds) {
			t.Errorf("fetch-add past the registration: %v, want ErrBounds", err)
		}
		if !a.Connected() {
			t.Error("a refused atomic broke the transport")
		}
	})
}

// TestRefusedBeforeAnythingMoves checks the errors of bad arguments: none
// changes memory, and none breaks the transport.
func TestRefusedBeforeAnythingMoves(t *testing.T) {
	a, _ := newPair(t)
	ctx := testContext(t)
	src := register(t, randomBytes(t, 64, 1))
	dst := register(t, make([]byte, 64))
	if _, err := src.View(60, 8); !errors.Is(err, ErrBounds) {
		t.Errorf("View past the end: %v", err)
	}
	if _, err := src.MutableView(-1, 8); !errors.Is(err, ErrBounds) {
		t.Errorf("MutableView at -1: %v", err)
	}
	if _, err := dst.Remote().Slice(60, 8); !errors.Is(err, ErrBounds) {
		t.Errorf("Slice past the end: %v", err)
	}
	cases := []struct {
		name   string
		remote RemoteBuffer
		want   error
	}{
		{"longer remote", slice(t, dst.Remote(), 0, 16), ErrBounds},
		{"shorter remote", slice(t, dst.Remote(), 0, 4), ErrBounds},
		{"past the registration", RemoteBuffer{Addr: dst.Remote().Addr + 60, Len: 8, Key: dst.Remote().Key}, ErrBounds},
		{"before the registration", RemoteBuffer{Addr: dst.Remote().Addr - 8, Len: 8, Key: dst.Remote().Key}, ErrBounds},
		{"wrapping", RemoteBuffer{Addr: 1<<64 - 4, Len: 8, Key: dst.Remote().Key}, ErrBounds},
		{"unknown key", RemoteBuffer{Addr: dst.Remote().Addr, Len: 8, Key: dst.Remote().Key ^ 1}, ErrUnregistered},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := a.Write(ctx, view(t, src, 0, 8), c.remote, false)
			if !errors.Is(err, c.want) {
				t.Fatalf("Write: %v, want %v", err, c.want)
			}
			if c.want == ErrUnregistered && !strings.Contains(err.Error(), fmt.Sprintf("%#x", c.remote.Key)) {
				t.Errorf("error %q does not name the key %#x", err, c.remote.Key)
			}
			if err := a.Read(ctx, mutableView(t, src, 0, 8), c.remote); !errors.Is(err, c.want) {
				t.Fatalf("Read: %v, want %v", err, c.want)
			}
			if !bytes.Equal(dst.buf, make([]byte, 64)) {
				t.Fatal("a refused operation changed memory")
			}
			if !a.Connected() {
				t.Fatal("a refused operation broke the transport")
			}
		})
	}
	if !bytes.Equal(src.buf, randomBytes(t, 64, 1)) {
		t.Fatal("a refused read changed the local memory")
	}
	if err := a.Write(ctx, View{}, dst.Remote(), false); !errors.Is(err, ErrInvalid) {
		t.Errorf("Write from the zero View: %v", err)
	}
	// After all that, the transport still works.
	if err := a.Write(ctx, view(t, src, 0, 64), dst.Remote(), false); err != nil || !bytes.Equal(dst.buf, src.buf) {
		t.Fatalf("Write after refusals: %v", err)
	}
}

// TestDeregister checks what deregistering does to local and remote use.
func TestDeregister(t *testing.T) {
	a, _ := newPair(t)
	ctx := testContext(t)
	src := register(t, []byte("abcdefgh"))
	dst, err := Register(make([]byte, 8))
	if err != nil {
		t.Fatal(err)
	}
	remote := dst.Remote()
	if err := a.Write(ctx, view(t, src, 0, 8), remote, false); err != nil {
		t.Fatal(err)
	}
	if err := dst.Deregister(); err != nil {
		t.Fatal(err)
	}
	if err := dst.Deregister(); !errors.Is(err, ErrUnregistered) {
		t.Errorf("second Deregister: %v, want ErrUnregistered", err)
	}
	for _, err := range []error{
		a.Write(ctx, view(t, src, 0, 8), remote, false),
		a.Read(ctx, mutableView(t, src, 0, 8), remote),
		func() error {
			_, err := a.FetchAdd(ctx, RemoteBuffer{Addr: remote.Addr &^ 7, Len: 8, Key: remote.Key}, 1)
			return err
		}(),
	} {
		if !errors.Is(err, ErrUnregistered) || !strings.Contains(err.Error(), fmt.Sprintf("%#x", remote.Key)) {
			t.Errorf("access to a deregistered key: %v, want ErrUnregistered naming key %#x", err, remote.Key)
		}
	}
	// Local views of deregistered memory are refused before anything moves.
	v, err := dst.View(0, 8)
	if err != nil {
		t.Fatal(err)
	}
	other := register(t, make([]byte, 8))
	if err := a.Write(ctx, v, other.Remote(), false); !errors.Is(err, ErrUnregistered) {
		t.Errorf("Write from a deregistered view: %v", err)
	}
	if !a.Connected() {
		t.Error("accesses to a deregistered key broke the transport")
	}
}

// TestZeroLength registers an empty buffer and moves nothing through it.
func TestZeroLength(t *testing.T) {
	a, _ := newPair(t)
	ctx := testContext(t)
	for _, buf := range [][]byte{nil, {}} {
		m := register(t, buf)
		if m.Len() != 0 || m.Remote().Len != 0 {
			t.Fatalf("empty registration has length %d, remote %v", m.Len(), m.Remote())
		}
		if err := a.Write(ctx, view(t, m, 0, 0), m.Remote(), false); err != nil {
			t.Fatal(err)
		}
		if err := a.Read(ctx, mutableView(t, m, 0, 0), m.Remote()); err != nil {
			t.Fatal(err)
		}
		if _, err := m.View(0, 1); !errors.Is(err, ErrBounds) {
			t.Fatalf("View(0, 1) of an empty buffer: %v", err)
		}
	}
}

// TestPipelined issues many operations from many goroutines at once, so
// that replies are read by one caller for others and the lead passes
// between them.
func TestPipelined(t *testing.T) {
	a, _ := newPair(t)
	ctx := testContext(t)
	const goroutines, rounds, chunk = 8, 50, 1024
	remote := register(t, make([]byte, goroutines*chunk))
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			src := register(t, make([]byte, chunk))
			back := register(t, make([]byte, chunk))
			part := slice(t, remote.Remote(), uint64(g*chunk), chunk)
			for r := range rounds {
				for i := range src.buf {
					src.buf[i] = byte(g*rounds + r + i)
				}
				if err := a.Write(ctx, view(t, src, 0, chunk), part, false); err != nil {
					t.Error(err)
					return
				}
				if err := a.Read(ctx, mutableView(t, back, 0, chunk), part); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(back.buf, src.buf) {
					t.Errorf("goroutine %d round %d read back other bytes", g, r)
					return
				}
			}
		})
	}
	wg.Wait()
}

// nativeWord and putNativeWord access a word as a Go uint64 at that
// address reads it: atomics work on that.
func nativeWord(b []byte) uint64 { return binaryNative.Uint64(b) }

func putNativeWord(b []byte, v uint64) { binaryNative.PutUint64(b, v) }

var binaryNative = binary.NativeEndian
