//go:build !linux

package launch

import (
	"errors"
	"os/exec"
	"syscall"
)

// InOwnGroup refuses: a process group tied to its parent's life is
// Linux's.
func InOwnGroup(*exec.Cmd) error {
	return errors.New("launching ranks is supported on Linux only")
}

// SignalGroup is never reached: InOwnGroup started nothing.
func SignalGroup(int, syscall.Signal) {}
