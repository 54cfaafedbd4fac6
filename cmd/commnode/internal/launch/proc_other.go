//go:build !linux

package launch

import (
	"errors"
	"os/exec"
	"syscall"
)

func inOwnGroup(*exec.Cmd) error {
	return errors.New("launching ranks is supported on Linux only")
}

// signalGroup is never reached: no rank starts.
func signalGroup(int, syscall.Signal) {}
