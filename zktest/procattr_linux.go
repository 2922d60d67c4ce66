//go:build linux

package zktest

import "syscall"

// serverProcAttr makes the kernel SIGKILL a server when the thread that started it
// goes away (in practice: when the test binary dies), so no JVM outlives a crashed or
// killed test run. The Go runtime does not end threads that a goroutine is not locked
// to, so the signal does not fire early.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
