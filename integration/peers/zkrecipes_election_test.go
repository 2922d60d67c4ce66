package peers

import "testing"

// A zkrecipes Election and Curator's LeaderLatch / LeaderSelector on one
// path: each participant is its own OS process, and the shared log must
// never show two leaders at once.
func TestLeaderZkrecipesWithCurator(t *testing.T) {
	servers := zkServers(t)
	for _, mode := range []string{"latch", "selector"} {
		t.Run(mode, func(t *testing.T) {
			res := runPeers(t, servers, uniquePath(t), runFor, 50, []peerSpec{
				{kind: Zkrecipes, mode: mode, id: "z1"},
				{kind: Curator, mode: mode, id: "c1"},
				{kind: Zkrecipes, mode: mode, id: "z2"},
				{kind: Curator, mode: mode, id: "c2"},
			})
			requireNoViolations(t, res.report)
			if res.report.MaxLeaders != 1 {
				t.Errorf("max leaders at once = %d, want 1", res.report.MaxLeaders)
			}
		})
	}
}

// Only zkrecipes participants, as a baseline for the mixed run.
func TestLeaderZkrecipesAlone(t *testing.T) {
	servers := zkServers(t)
	for _, mode := range []string{"latch", "selector"} {
		t.Run(mode, func(t *testing.T) {
			res := runPeers(t, servers, uniquePath(t), runFor, 50, []peerSpec{
				{kind: Zkrecipes, mode: mode, id: "z1"},
				{kind: Zkrecipes, mode: mode, id: "z2"},
				{kind: Zkrecipes, mode: mode, id: "z3"},
			})
			requireNoViolations(t, res.report)
			if res.report.MaxLeaders != 1 {
				t.Errorf("max leaders at once = %d, want 1", res.report.MaxLeaders)
			}
		})
	}
}
