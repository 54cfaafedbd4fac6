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
