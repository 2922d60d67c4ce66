package recipes_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRootPackageAgainstRealServer runs the library's in-package server
// tests (TestZK*, which reach unexported code such as the protected-create
// recovery) against this suite's real server.
func TestRootPackageAgainstRealServer(t *testing.T) {
	c := server(t)
	cmd := exec.Command("go", "test", "-race", "-count=1", "-run", "^TestZK", "-v", ".")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "ZK_SERVERS="+c.ConnectString())
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("root package server tests failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestZK") || strings.Contains(string(out), "--- SKIP") {
		t.Fatal("root package server tests did not run")
	}
}
