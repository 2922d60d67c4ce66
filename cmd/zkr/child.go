package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// runChild runs argv while lease is held and returns zkr's exit status.
// The command runs in its own process group with ZKR_LOCK_PATH and
// ZKR_FENCING_TOKEN set; signals from sigs are forwarded to the group. When
// the lease ends before the command does, the group gets SIGTERM, then
// SIGKILL after grace, and the status is exitLost.
func runChild(argv []string, path string, lease *zkrecipes.Lease, sigs <-chan os.Signal, grace time.Duration) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "ZKR_LOCK_PATH="+path, fmt.Sprintf("ZKR_FENCING_TOKEN=%d", lease.Token()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "zkr: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotExec
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	lostCh := lease.Done()
	var kill <-chan time.Time
	lost := false
	for {
		select {
		case <-done:
			if lost {
				return exitLost
			}
			return exitStatus(cmd.ProcessState)
		case <-lostCh:
			lostCh, lost = nil, true
			fmt.Fprintf(os.Stderr, "zkr: %v; sending SIGTERM to the command (SIGKILL in %v)\n", lease.Err(), grace)
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			kill = t.C
		case s := <-sigs:
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(-pgid, sig)
			}
		case <-kill:
			fmt.Fprintf(os.Stderr, "zkr: the command outlived the %v grace period; sending SIGKILL\n", grace)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

// exitStatus maps a finished process to a shell-style exit status.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
