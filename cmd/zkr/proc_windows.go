//go:build windows

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a new process group, so that a Ctrl-C at zkr's
// console is zkr's to handle, not the command's.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup ends the started cmd: Windows has no signals to forward, so
// any signal, SIGTERM included, kills the command (not the processes it
// started).
func signalGroup(cmd *exec.Cmd, _ os.Signal) { _ = cmd.Process.Kill() }

// exitStatus is the process's exit code.
func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }
