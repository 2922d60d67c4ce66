package peers

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The zkrecipes Mutex shares a lock path with each real peer it is
// wire-compatible with. Every participant is its own OS process, and mutual
// exclusion is checked from outside them, on the shared log.

func TestMutexZkrecipesWithCurator(t *testing.T) {
	servers := zkServers(t)
	res := runPeers(t, servers, uniquePath(t), runFor, holdMs, []peerSpec{
		{kind: Zkrecipes, mode: "mutex", id: "z1"},
		{kind: Curator, mode: "mutex", id: "c1"},
		{kind: Zkrecipes, mode: "mutex", id: "z2"},
		{kind: Curator, mode: "mutex", id: "c2"},
	})
	requireNoViolations(t, res.report)
}

func TestMutexZkrecipesWithKazoo(t *testing.T) {
	servers := zkServers(t)
	res := runPeers(t, servers, uniquePath(t), runFor, holdMs, []peerSpec{
		{kind: Zkrecipes, mode: "mutex", id: "z1"},
		{kind: Kazoo, mode: "mutex", id: "k1", extra: kazooCompat},
		{kind: Zkrecipes, mode: "mutex", id: "z2"},
		{kind: Kazoo, mode: "mutex", id: "k2", extra: kazooCompat},
	})
	requireNoViolations(t, res.report)
}

func TestMutexZkrecipesWithGoZookeeper(t *testing.T) {
	servers := zkServers(t)
	res := runPeers(t, servers, uniquePath(t), runFor, holdMs, []peerSpec{
		{kind: Zkrecipes, mode: "mutex", id: "z1"},
		{kind: Gozk, mode: "mutex", id: "g1"},
		{kind: Zkrecipes, mode: "mutex", id: "z2"},
		{kind: Gozk, mode: "mutex", id: "g2"},
	})
	requireNoViolations(t, res.report)
}

// kazoo without the compatibility pattern ignores Curator-style nodes, but
// zkrecipes sorts kazoo's __lock__ nodes by their sequence: a zkrecipes
// contender that comes after a kazoo holder waits for it. (The other way
// round kazoo overtakes, which is why kazoo needs extra_lock_patterns.)
func TestMutexZkrecipesNeverOvertakesKazoo(t *testing.T) {
	servers := zkServers(t)
	path := uniquePath(t)
	logPath := filepath.Join(t.TempDir(), "shared.log")
	common := []string{"--servers", servers, "--path", path, "--log", logPath}
	// kazoo, without the pattern, acquires once and holds for 3 s.
	holder := Start(t, Kazoo, append([]string{"mutex", "--id", "k1", "--duration", "1s", "--hold-ms", "3000"}, common...)...)
	waitForLine(t, logPath, "ENTER k1 ", holder)
	z := Start(t, Zkrecipes, append([]string{"mutex", "--id", "z1", "--duration", "5s", "--hold-ms", "1"}, common...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range []*Process{z, holder} {
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := CheckLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	requireNoViolations(t, rep)
	if rep.Acquisitions["z1"] < 1 {
		t.Fatalf("zkrecipes never acquired after kazoo released: %v", rep.Acquisitions)
	}
}
