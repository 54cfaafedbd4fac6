//go:build linux

package nvl

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRingsMappedWritable: once a segment is mapped, on the side that
// made it and on the side that opened it, writing every page of its
// rings faults none of them: the first records pay no page faults.
func TestRingsMappedWritable(t *testing.T) {
	if !populatesWritable(t) {
		t.Skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14): the rings fault as they fill")
	}
	l := layout{ringSize: 1 << 20, slots: 2, slotSize: MinSlot}
	made, fd, err := createSegment(l)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	defer made.unmap()
	opened, err := openSegment(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.unmap()
	runtime.LockOSThread() // the faults are counted for this thread
	defer runtime.UnlockOSThread()
	for name, s := range map[string]*segment{"made": made, "opened": opened} {
		before := minorFaults(t)
		for _, r := range []ring{s.ring0, s.ring1} {
			for at := 0; at < len(r.data); at += unix.Getpagesize() {
				r.data[at]++
			}
		}
		// A ring left to fault takes one a page, or one for every 16
		// where the kernel maps the pages around a fault; the runtime's
		// own work on this thread takes a few now and then.
		pages := 2 * l.ringSize / unix.Getpagesize()
		if n := minorFaults(t) - before; n > int64(pages/64) {
			t.Errorf("%s: writing the %d pages of the rings faulted %d times", name, pages, n)
		}
	}
}

// populatesWritable reports whether the kernel takes MADV_POPULATE_WRITE.
func populatesWritable(t *testing.T) bool {
	page, err := unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(page)
	return unix.Madvise(page, unix.MADV_POPULATE_WRITE) == nil
}

func minorFaults(t *testing.T) int64 {
	var u unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &u); err != nil {
		t.Fatal(err)
	}
	return u.Minflt
}
