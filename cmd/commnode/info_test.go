package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/gpu"
)

// TestInfoGPUs checks that info gives a line per GPU, or one saying why
// there is none.
func TestInfoGPUs(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"info"}, &out, &errb); code != 0 {
		t.Fatalf("info: exit %d, stderr %q", code, errb.String())
	}
	var gpuLines, noneLines []string
	for line := range strings.Lines(out.String()) {
		switch key, rest, _ := strings.Cut(line, " "); key {
		case "gpu":
			gpuLines = append(gpuLines, strings.TrimSpace(rest))
		case "gpus":
			noneLines = append(noneLines, strings.TrimSpace(rest))
		}
	}
	devs, err := gpu.Devices()
	if errors.Is(err, gpu.ErrUnavailable) {
		want := "none: " + err.Error()
		if len(noneLines) != 1 || noneLines[0] != want || len(gpuLines) != 0 {
			t.Fatalf("info without GPUs printed gpus %q and gpu %q, want gpus %q\n%s", noneLines, gpuLines, want, out.String())
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := gpu.Describe(devs); len(noneLines) != 0 || strings.Join(gpuLines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("info printed gpus %q and gpu %q, want gpu %q", noneLines, gpuLines, want)
	}
}
