package zkrecipes

import "testing"

// Boolean options take their value, so that a config flag passes straight
// through: WithX(false) is the default, WithX(true) turns it on.
func TestBooleanOptionsTakeTheirValue(t *testing.T) {
	for _, on := range []bool{false, true} {
		var n nodeConfig
		for _, o := range []NodeOption{WithProtection(on), WithParents(on), WithGuaranteed(on), WithDeleteChildren(on)} {
			o(&n)
		}
		if n.protected != on || n.parents != on || n.guaranteed != on || n.children != on {
			t.Errorf("node options(%v): protected %v, parents %v, guaranteed %v, deleteChildren %v",
				on, n.protected, n.parents, n.guaranteed, n.children)
		}
		var l lockConfig
		WithRevocable(on).applyLock(&l)
		if l.revocable != on {
			t.Errorf("WithRevocable(%v): revocable %v", on, l.revocable)
		}
		var e electionConfig
		WithProclaim(on).applyElection(&e)
		if e.proclaim != on {
			t.Errorf("WithProclaim(%v): proclaim %v", on, e.proclaim)
		}
	}
	// A later option overrides an earlier one, as a flag's default would.
	var l lockConfig
	WithRevocable(true).applyLock(&l)
	WithRevocable(false).applyLock(&l)
	if l.revocable {
		t.Error("WithRevocable(false) after WithRevocable(true) left the lock revocable")
	}
}
