//go:build !linux

package zktest

import "syscall"

// serverProcAttr puts the server in its own process group. Outside Linux there is no
// parent-death signal, so a server can outlive a test binary killed with SIGKILL;
// Close and tb.Cleanup stop it in every other case.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
