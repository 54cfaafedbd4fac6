package tensor

import "testing"

func TestDevice(t *testing.T) {
	if CPU.String() != "cpu" || (Device{}) != CPU || !CPU.IsCPU() {
		t.Errorf("CPU = %v", CPU)
	}
	if got := CUDA(3).String(); got != "cuda:3" {
		t.Errorf("CUDA(3) = %q", got)
	}
	if CUDA(0).IsCPU() {
		t.Error("CUDA(0).IsCPU()")
	}
	for s, want := range map[string]Device{"cpu": CPU, "cuda": CUDA(0), "cuda:0": CUDA(0), "cuda:12": CUDA(12)} {
		if got, err := ParseDevice(s); err != nil || got != want {
			t.Errorf("ParseDevice(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "gpu", "cpu:0", "cuda:", "cuda:-1", "cuda:+1", "cuda:x", "CUDA:0", "cuda:1:2"} {
		if got, err := ParseDevice(s); err == nil {
			t.Errorf("ParseDevice(%q) = %v, want error", s, got)
		}
	}
	for _, d := range []Device{CPU, CUDA(0), CUDA(7)} {
		if got, err := ParseDevice(d.String()); err != nil || got != d {
			t.Errorf("round trip %v: %v, %v", d, got, err)
		}
	}
}

type fakeMemory int

func (m fakeMemory) Len() int { return int(m) }

func TestOnDevice(t *testing.T) {
	mem := fakeMemory(64)
	x, err := OnDevice(CUDA(1), mem, 8, Float32, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if x.Device() != CUDA(1) || x.Numel() != 12 || x.NBytes() != 48 || x.Bytes() != nil {
		t.Fatalf("OnDevice made %v, %d elements, %d bytes", x, x.Numel(), x.NBytes())
	}
	if m, off := x.Memory(); m != mem || off != 8 {
		t.Fatalf("Memory() = %v, %d; want the memory at 8", m, off)
	}
	v, err := x.Narrow(5, 4)
	if err != nil {
		t.Fatal(err)
	}
	if m, off := v.Memory(); m != mem || off != 8+5*4 || v.Device() != CUDA(1) {
		t.Fatalf("a narrowed view is at %v, %d on %v; want 28 on cuda:1", m, off, v.Device())
	}
	r, err := v.Reshape(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, off := r.Memory(); off != 28 {
		t.Fatalf("a reshaped view is at %d, want 28", off)
	}
	if _, off := r.Clone().Memory(); off != 28 {
		t.Fatalf("a clone of a device tensor is at %d, want the same memory at 28", off)
	}
	if _, err := As[float32](x); err == nil {
		t.Fatal("As on a device tensor succeeded")
	}
	if m, _ := FromSlice([]float32{1}).Memory(); m != nil {
		t.Fatal("a CPU tensor has device memory")
	}
	for _, bad := range []struct {
		d     Device
		mem   Memory
		off   int
		shape []int
	}{
		{CPU, mem, 0, []int{1}},
		{Meta, mem, 0, []int{1}},
		{CUDA(0), nil, 0, []int{1}},
		{CUDA(0), mem, 2, []int{1}},  // misaligned
		{CUDA(0), mem, -4, []int{1}}, // before the memory
		{CUDA(0), mem, 8, []int{15}}, // past its end
		{CUDA(0), mem, 0, []int{-1}}, // a bad shape
	} {
		if _, err := OnDevice(bad.d, bad.mem, bad.off, Float32, bad.shape...); err == nil {
			t.Errorf("OnDevice(%v, %v, %d, %v) succeeded", bad.d, bad.mem, bad.off, bad.shape)
		}
	}
	if _, err := OnDevice(CUDA(0), mem, 64, Float32, 0); err != nil {
		t.Errorf("an empty tensor at the end of memory: %v", err)
	}
}
