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
// ZKR_FENCING_TOKEN set; signals from sigs are forwarded to the group
// (on Windows, any signal ends the command). When
// the lease ends before the command does, the group gets SIGTERM, then
// SIGKILL after grace, and the status is exitLost.
func runChild(argv []string, path string, lease *zkrecipes.Lease, sigs <-chan os.Signal, grace time.Duration) int {
	cmd, code := startCommand(argv, "ZKR_LOCK_PATH="+path, fmt.Sprintf("ZKR_FENCING_TOKEN=%d", lease.Token()))
	if cmd == nil {
		return code
	}
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
			signalGroup(cmd, syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			kill = t.C
		case s := <-sigs:
			signalGroup(cmd, s)
		case <-kill:
			fmt.Fprintf(os.Stderr, "zkr: the command outlived the %v grace period; sending SIGKILL\n", grace)
			signalGroup(cmd, syscall.SIGKILL)
		}
	}
}

// startCommand starts argv in a process group of its own, with env added
// to zkr's environment. When it cannot start, it says why and returns a
// nil command and zkr's exit status.
func startCommand(argv []string, env ...string) (*exec.Cmd, int) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "zkr: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, exitNotFound
		}
		return nil, exitCannotExec
	}
	return cmd, 0
}
