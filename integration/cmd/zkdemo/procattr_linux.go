//go:build linux

package main

import "syscall"

// workerProcAttr makes the kernel kill a worker if the demo dies first, so
// that no worker outlives it.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
