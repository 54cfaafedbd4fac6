package launch

import (
	"os/exec"
	"syscall"
)

// InOwnGroup makes cmd the leader of a new process group, so that
// signalling the group reaches its descendants too, and has it killed if
// the launcher dies.
func InOwnGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return nil
}

// SignalGroup sends sig to the process group led by pid. A group that is
// already gone is no error worth reporting.
func SignalGroup(pid int, sig syscall.Signal) {
	syscall.Kill(-pid, sig)
}
