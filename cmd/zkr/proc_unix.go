//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a process group of its own, so that a
// signal reaches every process it starts.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to the process group of the started cmd.
func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(-cmd.Process.Pid, s)
	}
}

// exitStatus maps a finished process to a shell-style exit status: 128
// plus the signal that ended it, else its exit code.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
