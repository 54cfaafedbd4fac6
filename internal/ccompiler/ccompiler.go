package ccompiler

import (
	"fmt"
	"os"
	"os/exec"
)

// Find returns the C compiler, $CC or else cc, or an error saying that
// neither is on the PATH.
func Find() (string, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return "", fmt.Errorf("no C compiler (%s): %v", cc, err)
	}
	return cc, nil
}
