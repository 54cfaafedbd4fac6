package main

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/gpu"
	"github.com/gocomms/gocomms/nccl"
	"github.com/gocomms/gocomms/transport/tcp"
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

// TestTCPAddress checks info's line on the address TCP advertises: which,
// on which interface, where it listens, and the variable that decided.
func TestTCPAddress(t *testing.T) {
	ifcs := []tcp.Interface{
		{Name: "lo", Up: true, Loopback: true, Addrs: []net.IP{net.ParseIP("127.0.0.1")}},
		{Name: "eth0", Up: true, Addrs: []net.IP{net.ParseIP("10.0.0.5")}},
		{Name: "veth1", Up: true, Addrs: []net.IP{net.ParseIP("fd00::2")}},
	}
	for _, tc := range []struct {
		spec string
		set  bool
		want []string
	}{
		{"", false, []string{"10.0.0.5 (eth0)", "every interface", "GOCOMMS_SOCKET_IFNAME unset"}},
		{"veth", true, []string{"fd00::2 (veth1)", "on it alone", `GOCOMMS_SOCKET_IFNAME="veth"`}},
		{"^eth,veth", true, []string{"127.0.0.1 (lo)", "on it alone"}},
		{"=ib0", true, []string{"none:", "up: lo, eth0, veth1", `GOCOMMS_SOCKET_IFNAME="=ib0"`}},
	} {
		got := tcpAddress(tc.spec, tc.set, ifcs)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: %q lacks %q", tc.spec, got, w)
			}
		}
	}
}

// TestInfoNCCL checks info's line on NCCL: the version and file Locate
// found, or where it looked.
func TestInfoNCCL(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"info"}, &out, &errb); code != 0 {
		t.Fatalf("info: exit %d, stderr %q", code, errb.String())
	}
	var got []string
	for line := range strings.Lines(out.String()) {
		if key, rest, _ := strings.Cut(line, " "); key == "nccl" {
			got = append(got, strings.TrimSpace(rest))
		}
	}
	if want := ncclLine(nccl.Locate()); len(got) != 1 || got[0] != want {
		t.Errorf("info printed nccl lines %q, want one, %q", got, want)
	}
	for _, tc := range []struct {
		f    nccl.Found
		err  error
		want string
	}{
		{nccl.Found{Version: "2.21.5", Path: "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", Via: "$VIRTUAL_ENV"}, nil,
			"2.21.5 (/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2, found through $VIRTUAL_ENV)"},
		{nccl.Found{}, errors.New("nccl: NCCL not found; looked in: the loader's search path (libnccl.so.2 not found)"),
			"NCCL not found; looked in: the loader's search path (libnccl.so.2 not found)"},
	} {
		if got := ncclLine(tc.f, tc.err); got != tc.want {
			t.Errorf("ncclLine(%+v, %v) = %q, want %q", tc.f, tc.err, got, tc.want)
		}
	}
}
