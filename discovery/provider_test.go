package discovery

import (
	"testing"
	"time"
)

// providerOf returns a ServiceCache holding ins, for the Provider's logic
// without a server.
func providerOf(ins []Instance, opts ...ProviderOption) *Provider {
	d := New(nil, "/s")
	p := d.NewProvider("svc", opts...)
	p.cache.mu.Lock()
	for i := range ins {
		p.cache.nodes[ins[i].ID] = cachedNode{inst: ins[i]}
	}
	p.cache.publishLocked()
	p.cache.mu.Unlock()
	return p
}

func ids(n int) []Instance {
	var out []Instance
	for i := 0; i < n; i++ {
		out = append(out, Instance{Name: "svc", ID: string(rune('a' + i))})
	}
	return out
}

func TestRoundRobin_TakesEachInTurn(t *testing.T) {
	p := providerOf(ids(3))
	var got string
	for i := 0; i < 6; i++ {
		in, err := p.Instance()
		if err != nil {
			t.Fatal(err)
		}
		got += in.ID
	}
	if got != "abcabc" {
		t.Errorf("got %s", got)
	}
}

func TestRandom_ReachesEveryInstance(t *testing.T) {
	p := providerOf(ids(3), WithStrategy(Random()))
	seen := map[string]bool{}
	for i := 0; i < 300 && len(seen) < 3; i++ {
		in, _ := p.Instance()
		seen[in.ID] = true
	}
	if len(seen) != 3 {
		t.Errorf("seen %v", seen)
	}
}

func TestSticky_KeepsItsInstanceWhileAvailable(t *testing.T) {
	p := providerOf(ids(3), WithStrategy(Sticky(RoundRobin())))
	first, _ := p.Instance()
	for i := 0; i < 5; i++ {
		if in, _ := p.Instance(); in.ID != first.ID {
			t.Fatalf("moved from %s to %s", first.ID, in.ID)
		}
	}
	p.NoteError(first)
	p.NoteError(first)
	next, _ := p.Instance()
	if next.ID == first.ID {
		t.Errorf("sticky to an instance reported down")
	}
}

func TestProvider_LeavesOutDownAndDisabledInstancesForAWhile(t *testing.T) {
	ins := ids(2)
	ins = append(ins, Instance{Name: "svc", ID: "z", Disabled: true})
	p := providerOf(ins, WithDownInstancePolicy(10*time.Second, 2))
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	if got := len(p.Available()); got != 2 {
		t.Fatalf("a disabled instance is never available: %d", got)
	}
	p.NoteError(ins[0])
	if got := len(p.Available()); got != 2 {
		t.Fatalf("one error is below the threshold: %d", got)
	}
	p.NoteError(ins[0])
	for i := 0; i < 4; i++ {
		if in, _ := p.Instance(); in.ID != "b" {
			t.Fatalf("chose %s, which is down", in.ID)
		}
	}
	p.NoteError(ins[1])
	p.NoteError(ins[1])
	if _, err := p.Instance(); err == nil {
		t.Fatal("no instance when every one is down")
	}
	now = now.Add(10 * time.Second)
	if got := len(p.Available()); got != 2 {
		t.Errorf("back after the policy's time: %d", got)
	}
}

func TestSticky_WithANilMasterFallsBackToRoundRobin(t *testing.T) {
	p := providerOf(ids(2), WithStrategy(Sticky(nil)))
	if _, err := p.Instance(); err != nil {
		t.Fatal(err)
	}
}
