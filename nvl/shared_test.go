//go:build linux

package nvl

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// TestShared: memory one side makes, another maps through its handle;
// what either writes, the other reads; a handle to a file shorter than
// asked, or to no file, is refused.
func TestShared(t *testing.T) {
	s, err := NewShared(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	peer, unmap, err := MapShared(s.Handle, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	copy(s.Mem[100:], "from the owner")
	copy(peer[200:], "from the peer")
	if !bytes.Equal(peer[100:114], []byte("from the owner")) || !bytes.Equal(s.Mem[200:213], []byte("from the peer")) {
		t.Fatal("the two mappings do not share their bytes")
	}
	if err := unmap(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := MapShared(s.Handle, 1<<17); err == nil {
		t.Fatal("mapped more than the file holds")
	}
	if _, _, err := MapShared(SharedHandle{PID: unix.Getpid(), FD: 1 << 20}, 8); err == nil {
		t.Fatal("mapped a descriptor that is not open")
	}
	if _, err := NewShared(0); err == nil {
		t.Fatal("made shared memory of 0 bytes")
	}
}
