//go:build !linux

package main

import "syscall"

// workerProcAttr puts a worker in its own process group; outside Linux there
// is no parent-death signal, and the demo's clean-up is the only one.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
