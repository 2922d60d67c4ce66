//go:build linux

package fleet

import (
	"os/exec"
	"syscall"
	"testing"
)

// Hog starts n processes that busy-loop for the rest of the test, each
// keeping one core busy at the priority of everything else: the busy
// machine a fault run must also pass on. t.Cleanup kills each of them, by
// its own process id, and waits for it; none outlives the test binary.
func Hog(t testing.TB, n int) {
	t.Helper()
	for i := range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting CPU hog %d: %v", i+1, err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}
