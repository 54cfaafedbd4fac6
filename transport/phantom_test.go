package transport

import "testing"

func TestPhantomIsSharedAndNeverPooled(t *testing.T) {
	a, b := Phantom(100), Phantom(1<<20)
	if len(a) != 100 || len(b) != 1<<20 || &a[0] != &b[0] {
		t.Fatalf("Phantom views: len %d and %d, shared %v", len(a), len(b), &a[0] == &b[0])
	}
	if Phantom(0) != nil || Phantom(-1) != nil || Phantom(phantomBytes+1) != nil {
		t.Fatal("Phantom of a size out of range is not nil")
	}
	if !IsPhantom(a) || !IsPhantom(b) || IsPhantom(make([]byte, 100)) || IsPhantom(nil) {
		t.Fatal("IsPhantom tells phantom views from other slices wrongly")
	}
	PutBuffer(b)
	for range 100 {
		if g := GetBuffer(1 << 20); &g[0] == &a[0] {
			t.Fatal("GetBuffer returned a phantom view PutBuffer was given")
		}
	}
}
