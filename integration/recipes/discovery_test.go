package recipes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

func instanceIDs(in []discovery.Instance) []string {
	out := []string{}
	for _, i := range in {
		out = append(out, i.ID)
	}
	sort.Strings(out)
	return out
}

// awaitCache waits until the cache holds exactly the instances ids.
func awaitCache(t *testing.T, c *discovery.ServiceCache, within time.Duration, ids ...string) {
	t.Helper()
	deadline := time.After(within)
	for {
		insts, ch := c.Instances()
		if got := instanceIDs(insts); slices.Equal(ids, got) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			insts, _ := c.Instances()
			t.Fatalf("cache holds %v, want %v", instanceIDs(insts), ids)
		}
	}
}

func TestDiscovery_RegisterQueryUpdateUnregister(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	base := testPath(t)
	d := discovery.New(cl.Session, base)
	defer d.Close(context.Background())
	ctx := ctxT(t, 20*time.Second)
	a := discovery.Instance{Name: "api", ID: "a", Address: "127.0.0.1", Port: 8080, Payload: json.RawMessage(`{"zone":"z1"}`),
		URISpec: "{scheme}://{address}:{port}/v1"}
	require.NoError(t, d.Register(ctx, a))
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "b", Address: "127.0.0.1", Port: 8081}))
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "db", ID: "x", Address: "127.0.0.1", Port: 5432}))
	// A node that is not an instance is skipped, not an error.
	_, err := raw(t, c).Create(base+"/api/junk", []byte("not json"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	names, err := d.QueryForNames(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"api", "db"}, names)
	ins, err := d.QueryForInstances(ctx, "api")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, instanceIDs(ins))
	got, err := d.QueryForInstance(ctx, "api", "a")
	require.NoError(t, err)
	assert.JSONEq(t, `{"zone":"z1"}`, string(got.Payload))
	assert.Equal(t, "java.util.LinkedHashMap", got.PayloadClass)
	u, _ := got.URI(nil)
	assert.Equal(t, "http://127.0.0.1:8080/v1", u)
	_, err = d.QueryForInstance(ctx, "api", "nope")
	assert.ErrorIs(t, err, discovery.ErrNoInstance)
	_, err = d.QueryForInstance(ctx, "api", "junk")
	assert.ErrorIs(t, err, discovery.ErrBadInstance)

	a.Port = 9090
	require.NoError(t, d.Update(ctx, a))
	got, err = d.QueryForInstance(ctx, "api", "a")
	require.NoError(t, err)
	assert.Equal(t, 9090, got.Port)

	require.NoError(t, d.Unregister(ctx, "api", "b"))
	ins, err = d.QueryForInstances(ctx, "api")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, instanceIDs(ins))
	assert.ErrorIs(t, d.Unregister(ctx, "api", "b"), discovery.ErrNotRegistered)
	assert.ErrorIs(t, d.Register(ctx, discovery.Instance{Name: "a/b", ID: "x"}), discovery.ErrBadName)
	require.NoError(t, d.Close(ctx))
	assert.Empty(t, children(t, raw(t, c), base+"/db"), "Close unregisters")
	assert.ErrorIs(t, d.Register(ctx, a), discovery.ErrClosed)
}

func TestServiceCache_FollowsRegistrationsAndConvergesAfterExpiry(t *testing.T) {
	c := server(t)
	reg := connect(t, c, nil)
	watcher := connect(t, c, nil)
	base := testPath(t)
	d := discovery.New(reg.Session, base)
	defer d.Close(context.Background())
	ctx := ctxT(t, 30*time.Second)
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Address: "h", Port: 1}))

	cache := discovery.New(watcher.Session, base).NewCache("api")
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctx))
	awaitCache(t, cache, time.Second, "a") // loaded by Start

	start := time.Now()
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "b", Address: "h", Port: 2}))
	awaitCache(t, cache, 5*time.Second, "a", "b")
	t.Logf("registration to cache: %v", time.Since(start))

	require.NoError(t, d.Update(ctx, discovery.Instance{Name: "api", ID: "b", Address: "h", Port: 3}))
	require.Eventually(t, func() bool {
		insts, _ := cache.Instances()
		for _, i := range insts {
			if i.ID == "b" {
				return i.Port == 3
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "an update reaches the cache")

	// The registering session expires: both instances go, then come back,
	// registered by the new session.
	obs := raw(t, c)
	old := reg.SessionID()
	reg.expire(t)
	start = time.Now()
	require.Eventually(t, func() bool {
		id := reg.SessionID()
		if id == old || id == 0 {
			return false
		}
		for _, n := range []string{"a", "b"} {
			_, st, err := obs.Get(base + "/api/" + n)
			if err != nil || st.EphemeralOwner != id {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "the instances are registered again by the new session")
	awaitCache(t, cache, 10*time.Second, "a", "b")
	require.Eventually(t, func() bool {
		st, _, err := d.Status("api", "a")
		return err == nil && st.InPlace
	}, 10*time.Second, 10*time.Millisecond)
	t.Logf("registrations back in the cache %v after the expiry", time.Since(start))

	// The watching session expires: the cache converges on the new one.
	old = watcher.SessionID()
	watcher.expire(t)
	require.Eventually(t, func() bool { id := watcher.SessionID(); return id != old && id != 0 }, 30*time.Second, 10*time.Millisecond,
		"the watching Session has a new session")
	require.NoError(t, d.Unregister(ctx, "api", "a"))
	awaitCache(t, cache, 10*time.Second, "b")
	assert.NoError(t, cache.Err())
}

func TestProvider_ChoosesAmongLiveInstancesAndSkipsDownOnes(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	base := testPath(t)
	d := discovery.New(cl.Session, base)
	defer d.Close(context.Background())
	ctx := ctxT(t, 20*time.Second)
	p := d.NewProvider("api", discovery.WithDownInstancePolicy(time.Minute, 1))
	defer p.Close(context.Background())
	require.NoError(t, p.Start(ctx))
	_, err := p.Instance()
	assert.ErrorIs(t, err, discovery.ErrNoInstance)
	for _, id := range []string{"a", "b"} {
		require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: id, Address: "h", Port: 1}))
	}
	require.Eventually(t, func() bool { all, _ := p.All(); return len(all) == 2 }, 5*time.Second, 5*time.Millisecond)
	i1, _ := p.Instance()
	i2, _ := p.Instance()
	assert.NotEqual(t, i1.ID, i2.ID, "round robin")
	p.NoteError(i1)
	for k := 0; k < 4; k++ {
		i, err := p.Instance()
		require.NoError(t, err)
		assert.Equal(t, i2.ID, i.ID, "an instance reported down is left out")
	}
}

func TestServiceCache_CloseLeavesNoGoroutine(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	base := testPath(t)
	d := discovery.New(cl.Session, base)
	ctx := ctxT(t, 20*time.Second)
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "a"}))
	ignore := goleak.IgnoreCurrent()
	cache := d.NewCache("api")
	require.NoError(t, cache.Start(ctx))
	awaitCache(t, cache, time.Second, "a")
	require.NoError(t, cache.Close(ctx))
	require.NoError(t, d.Close(ctx))
	goleak.VerifyNone(t, append(ownGoroutinesOnly, ignore)...)
	assert.False(t, errors.Is(cache.Err(), discovery.ErrClosed))
}

// A cache of a large service runs on one TreeCache: its goroutines do not
// grow with the instances it follows. (The bound leaves room for the
// Session's idle request workers, at most 16, which its first load may
// start; a goroutine per instance would add 200.)
func TestServiceCache_CostsNoGoroutinePerInstance(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	base := testPath(t)
	d := discovery.New(cl.Session, base)
	ctx := ctxT(t, 30*time.Second)
	const n = 200
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("i%03d", i)
		require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: ids[i]}))
	}
	before := runtime.NumGoroutine()
	cache := d.NewCache("api")
	require.NoError(t, cache.Start(ctx))
	defer cache.Close(context.Background())
	awaitCache(t, cache, 5*time.Second, ids...)
	grown := runtime.NumGoroutine() - before
	assert.Less(t, grown, 30, "goroutines added by a cache of %d instances", n)
}

func TestDiscovery_RegistrationSurvivesServerKillsNeverDuplicated(t *testing.T) {
	server(t) // the suite's backend must be available
	ens := zktest.Start(t, zktest.WithSize(3))
	ctx := ctxT(t, 3*time.Minute)
	_, err := ens.WaitLeader(ctx)
	require.NoError(t, err)
	reg := connect(t, ens, nil, zr.WithSessionTimeout(6*time.Second))
	watcher := connect(t, ens, nil, zr.WithSessionTimeout(6*time.Second))
	base := testPath(t)
	d := discovery.New(reg.Session, base)
	defer d.Close(context.Background())
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Address: "h", Port: 1}))
	cache := discovery.New(watcher.Session, base).NewCache("api")
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctx))
	obs := raw(t, ens)
	for i := 0; i < ens.Size(); i++ {
		require.NoError(t, ens.Kill(i))
		_, err := ens.WaitLeader(ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			st, _, err := d.Status("api", "a")
			return err == nil && st.InPlace
		}, 30*time.Second, 20*time.Millisecond, "registration in place after killing server %d", i)
		require.Eventually(t, func() bool { // the observer may be on the killed server: retry
			kids, _, err := obs.Children(base + "/api")
			if err != nil || len(kids) != 1 {
				return false
			}
			_, st, err := obs.Get(base + "/api/a")
			return err == nil && st.EphemeralOwner == reg.SessionID()
		}, 20*time.Second, 20*time.Millisecond, "one node, of the current session")
		awaitCache(t, cache, 10*time.Second, "a")
		require.NoError(t, ens.Restart(i))
		require.NoError(t, ens.WaitServing(ctx, i))
	}
}

// Instances is Status-shaped: the instances now, and a channel closed at
// their next change (a Register seen by the cache), as Provider.All is.
func TestServiceCache_InstancesChannelClosesAtTheNextChange(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	base := testPath(t)
	d := discovery.New(cl.Session, base)
	defer d.Close(context.Background())
	ctx := ctxT(t, 30*time.Second)
	cache := d.NewCache("api")
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctx))
	p := d.NewProvider("api")
	defer p.Close(context.Background())
	require.NoError(t, p.Start(ctx))

	insts, changed := cache.Instances()
	assert.Empty(t, insts)
	all, allChanged := p.All()
	assert.Empty(t, all)
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Address: "h", Port: 1}))
	for what, ch := range map[string]<-chan struct{}{"ServiceCache.Instances": changed, "Provider.All": allChanged} {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: channel not closed at the next change", what)
		}
	}
	awaitCache(t, cache, 5*time.Second, "a")
}
