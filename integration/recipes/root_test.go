package recipes_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// wireOffReconnects are the root package's server tests that reconnect a
// Session with the wire layer off: there nothing orders go-zookeeper's
// reading of its last zxid for SetWatches against the goroutine that
// records each reply's zxid (go-zookeeper/zk#35, go-zookeeper's own race,
// which the wire layer removes), so a loaded machine trips -race at
// random (seen beside two CPU hogs). They run without -race, as the
// contract suite's wire-off stage does (scripts/test.sh).
const wireOffReconnects = "^TestZKTreeCacheResyncUnderTheSameSessionSetsNoSecondWatch$"

// TestRootPackageAgainstRealServer runs the library's in-package server
// tests (TestZK*, which reach unexported code such as the protected-create
// recovery) against this suite's real server: under -race, but for those
// of wireOffReconnects, which run without it.
func TestRootPackageAgainstRealServer(t *testing.T) {
	c := server(t)
	for _, args := range [][]string{
		{"-race", "-run", "^TestZK", "-skip", wireOffReconnects},
		{"-run", wireOffReconnects},
	} {
		cmd := exec.Command("go", append(append([]string{"test", "-count=1"}, args...), "-v", ".")...)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "ZK_SERVERS="+c.ConnectString())
		out, err := cmd.CombinedOutput()
		t.Logf("%v:\n%s", args, out)
		if err != nil {
			t.Fatalf("root package server tests (%v) failed: %v", args, err)
		}
		if !strings.Contains(string(out), "--- PASS: TestZK") || strings.Contains(string(out), "--- SKIP") {
			t.Fatalf("root package server tests (%v) did not run", args)
		}
	}
}
