//go:build linux

package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

func TestLaunchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"true"},
		{"-n", "0", "true"},
		{"-n", "2"},
		{"-n", "2", "--"},
		{"-bogus", "-n", "2", "true"},
		{"-n", "2", "-master-port", "70000", "true"},
		{"-n", "2", "-timeout", "-1s", "true"},
		{"-n", "2", "-grace", "0s", "true"},
	} {
		var out, errb bytes.Buffer
		if code := launchCommand(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: commnode launch") {
			t.Errorf("launch %q: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

func TestLaunchRunsAndReports(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh:", err)
	}
	var out, errb bytes.Buffer
	if code := launchCommand([]string{"-n", "2", "--", "sh", "-c", `echo "$RANK/$WORLD_SIZE $MASTER_ADDR"`}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	for _, want := range []string{"[rank 0] 0/2 127.0.0.1\n", "[rank 1] 1/2 127.0.0.1\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout %q lacks %q", out.String(), want)
		}
	}

	out.Reset()
	errb.Reset()
	failing := `if [ "$RANK" = 1 ]; then echo boom >&2; exit 3; fi; exec sleep 30`
	if code := launchCommand([]string{"-n", "3", "sh", "-c", failing}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errb.String())
	}
	for _, want := range []string{
		"[rank 1] boom\n",
		"commnode launch: rank 1 failed first: exit status 3\n",
		"commnode launch: rank 0: signal: terminated (stopped by the launcher)\n",
		"commnode launch: rank 2: signal: terminated (stopped by the launcher)\n",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
}
