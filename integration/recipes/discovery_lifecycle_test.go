package recipes_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// discoveryCalls runs every call of a ServiceDiscovery that reads or
// writes ZooKeeper, and returns their errors by name.
func discoveryCalls(ctx context.Context, d *discovery.ServiceDiscovery) map[string]error {
	errs := map[string]error{}
	_, errs["QueryForNames"] = d.QueryForNames(ctx)
	_, errs["QueryForInstances"] = d.QueryForInstances(ctx, "api")
	_, errs["QueryForInstance"] = d.QueryForInstance(ctx, "api", "a")
	c := d.NewCache("api")
	errs["NewCache.Start"] = c.Start(ctx)
	_ = c.Close(ctx)
	p := d.NewProvider("api")
	errs["NewProvider.Start"] = p.Start(ctx)
	_ = p.Close(ctx)
	errs["Register"] = d.Register(ctx, discovery.Instance{Name: "api", ID: "b"})
	errs["Update"] = d.Update(ctx, discovery.Instance{Name: "api", ID: "a"})
	return errs
}

// After a ServiceDiscovery's Close, and after its Session's Close, every
// call says it is closed: never a result, and never go-zookeeper's
// ErrConnectionClosed, which means "retry once reconnected".
func TestDiscovery_EveryCallAfterCloseReturnsErrClosed(t *testing.T) {
	c := server(t)
	base := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	a := discovery.Instance{Name: "api", ID: "a", Address: "127.0.0.1", Port: 1}

	cl := connect(t, c, nil)
	d := discovery.New(cl.Session, base)
	require.NoError(t, d.Register(ctx, a))
	other := discovery.New(connect(t, c, nil).Session, base) // keeps the service listed
	defer other.Close(context.Background())
	require.NoError(t, other.Register(ctx, discovery.Instance{Name: "api", ID: "o"}))
	require.NoError(t, d.Close(ctx))
	for name, err := range discoveryCalls(ctx, d) {
		assert.ErrorIs(t, err, discovery.ErrClosed, "%s after the ServiceDiscovery's Close", name)
	}
	assert.ErrorIs(t, d.Unregister(ctx, "api", "a"), discovery.ErrClosed, "Unregister after the ServiceDiscovery's Close")

	cl2 := connect(t, c, nil)
	d2 := discovery.New(cl2.Session, base)
	require.NoError(t, d2.Register(ctx, a))
	require.NoError(t, cl2.Close())
	for name, err := range discoveryCalls(ctx, d2) {
		assert.ErrorIs(t, err, discovery.ErrClosed, "%s after the Session's Close", name)
		assert.ErrorIs(t, err, zr.ErrClosed, "%s after the Session's Close", name)
		assert.NotErrorIs(t, err, zk.ErrConnectionClosed, "%s after the Session's Close", name)
	}
}

// A query in flight when the Session is closed returns ErrClosed, not the
// connection's error: the Session is closed, not cut off. So does a read
// of the root package's own request layer.
func TestDiscovery_AQueryInFlightAtSessionCloseReturnsErrClosed(t *testing.T) {
	c := server(t)
	base := testPath(t)
	// The rounds run side by side: go-zookeeper's Close waits a second for
	// the reply to its close request, which a blackhole withholds.
	type outcome struct {
		round int
		errs  []error
	}
	out := make(chan outcome, 20)
	for round := range 20 {
		proxy := zktest.NewProxy(t, c.Servers()[0])
		// A long session timeout: the blackhole must not outlast
		// go-zookeeper's read timeout (two thirds of it) on a loaded
		// machine, or the calls fail as cut off, not closed.
		cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(30*time.Second))
		d := discovery.New(cl.Session, base)
		e := zr.NewElection(cl.Session, base+"/election")
		go func() {
			proxy.Blackhole() // the requests wait for their replies
			errs := make(chan error, 2)
			go func() { _, err := d.QueryForInstances(context.Background(), "api"); errs <- err }()
			go func() { _, err := e.Participants(context.Background()); errs <- err }()
			time.Sleep(time.Duration(round%5) * 10 * time.Millisecond) // varied: the requests may not be sent yet
			_ = cl.Close()
			o := outcome{round: round}
			for range 2 {
				select {
				case err := <-errs:
					o.errs = append(o.errs, err)
				case <-time.After(10 * time.Second):
					o.errs = append(o.errs, errors.New("a call in flight did not return after the Session's Close"))
				}
			}
			proxy.Heal()
			out <- o
		}()
	}
	for range 20 {
		o := <-out
		for i, err := range o.errs {
			require.ErrorIs(t, err, zr.ErrClosed, "round %d, call %d", o.round, i)
			require.NotErrorIs(t, err, zk.ErrConnectionClosed, "round %d, call %d", o.round, i)
		}
	}
}

// Register and Update refuse a service type Curator does not know before
// anything is written: Curator's readers fail on such an instance for the
// whole service.
func TestDiscovery_RegisterRefusesAnUnknownServiceType(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	obs := raw(t, c)
	base := testPath(t)
	d := discovery.New(cl.Session, base)
	defer d.Close(context.Background())
	ctx := ctxT(t, 20*time.Second)
	for _, typ := range []discovery.ServiceType{"dynamic", "EPHEMERAL", "STATIC ", "X"} {
		err := d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Type: typ})
		assert.ErrorIs(t, err, discovery.ErrBadType, "type %q", typ)
		assert.ErrorIs(t, err, discovery.ErrBadInstance, "type %q", typ)
		assert.Empty(t, children(t, obs, base+"/api"), "nothing written for type %q", typ)
	}
	for _, typ := range []discovery.ServiceType{"", discovery.Dynamic, discovery.DynamicSequential, discovery.Static, discovery.Permanent} {
		id := "id-" + string(typ)
		require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: id, Type: typ}), "type %q", typ)
		require.NoError(t, d.Unregister(ctx, "api", id))
	}
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "a"}))
	err := d.Update(ctx, discovery.Instance{Name: "api", ID: "a", Type: "dynamic"})
	assert.ErrorIs(t, err, discovery.ErrBadType)
	got, err := d.QueryForInstance(ctx, "api", "a")
	require.NoError(t, err)
	assert.Equal(t, discovery.Dynamic, got.Type, "the refused update wrote nothing")
}

// instanceNode returns, from outside, the node of the instance id of
// service api under base (whatever its kind: a DynamicSequential one
// carries a protected name ending with id and a sequence number), and
// fails the test unless there is exactly one.
func instanceNode(t *testing.T, obs *zk.Conn, base, id string) (string, nodeSeen) {
	t.Helper()
	var name string
	var seen nodeSeen
	n := 0
	for k, v := range nodesOf(t, obs, base+"/api", id) {
		if k == id || strings.HasPrefix(k, "_c_") && strings.Contains(k, "-"+id) {
			name, seen = k, v
			n++
		}
	}
	require.Equal(t, 1, n, "one node of instance %s", id)
	return name, seen
}

// Registering an instance again with another Type re-creates its node in
// the kind the new Type asks for, as Curator does: a Dynamic instance
// made Static is a persistent node that outlives the Session, and a
// Static one made Dynamic ends with it.
func TestDiscovery_ReRegisteringWithANewTypeChangesTheNodeKind(t *testing.T) {
	c := server(t)
	obs := raw(t, c)
	base := testPath(t)
	cl := connect(t, c, nil)
	d := discovery.New(cl.Session, base)
	ctx := ctxT(t, 20*time.Second)
	steps := []struct {
		id       string
		from, to discovery.ServiceType
	}{
		{"dyn-to-static", discovery.Dynamic, discovery.Static},
		{"dyn-to-permanent", "", discovery.Permanent},
		{"static-to-dyn", discovery.Static, discovery.Dynamic},
		{"static-to-seq", discovery.Static, discovery.DynamicSequential},
		{"seq-to-static", discovery.DynamicSequential, discovery.Static},
	}
	persistent := func(typ discovery.ServiceType) bool { return typ == discovery.Static || typ == discovery.Permanent }
	for _, s := range steps {
		require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: s.id, Type: s.from}))
		_, seen := instanceNode(t, obs, base, s.id)
		require.Equal(t, persistent(s.from), seen.owner == 0, "%s: first registration's kind", s.id)
		require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: s.id, Type: s.to}))
		name, seen := instanceNode(t, obs, base, s.id)
		if persistent(s.to) {
			assert.Zero(t, seen.owner, "%s: a persistent node now", s.id)
		} else {
			assert.Equal(t, cl.SessionID(), seen.owner, "%s: an ephemeral node of the Session now", s.id)
		}
		assert.Equal(t, s.to == discovery.DynamicSequential, strings.HasPrefix(name, "_c_"), "%s: node %s", s.id, name)
		inst, err := discovery.Unmarshal([]byte(seen.data))
		require.NoError(t, err)
		assert.Equal(t, s.to, inst.Type, "%s: the node holds the new type", s.id)
	}
	require.NoError(t, cl.Close())
	// The persistent ones outlive the Session, the ephemeral ones do not.
	assert.ElementsMatch(t, []string{"dyn-to-static", "dyn-to-permanent", "seq-to-static"}, children(t, obs, base+"/api"))
	for _, id := range []string{"dyn-to-static", "dyn-to-permanent", "seq-to-static"} {
		require.NoError(t, obs.Delete(base+"/api/"+id, -1))
	}
}

// An Unregister whose delete is not confirmed (its reply lost, ctx ended)
// goes on in the background; a Register of the same instance right after
// it must not be undone by that delete: once Register has returned, the
// registration stays.
func TestDiscovery_RegisterAfterAnUnconfirmedUnregisterIsNotUndone(t *testing.T) {
	c := server(t)
	obs := raw(t, c)
	base := testPath(t)
	// Two ways to the server, so that the client reconnects at once
	// (go-zookeeper waits a second before it tries a server again), and a
	// retry policy whose first wait (75-225 ms) outlasts the reconnection:
	// a background delete retried after the reset comes after the new
	// registration's create.
	p1, p2 := zktest.NewProxy(t, c.Servers()[0]), zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{p1.Addr(), p2.Addr()}, zr.WithRetryPolicy(zr.ExponentialBackoff(150*time.Millisecond, 150*time.Millisecond)))
	d := discovery.New(cl.Session, base)
	defer d.Close(context.Background())
	path := base + "/api/a"
	for round := range 20 {
		typ := []discovery.ServiceType{discovery.Dynamic, discovery.Static}[round%2]
		inst := discovery.Instance{Name: "api", ID: "a", Type: typ, RegistrationTime: time.UnixMilli(1700000000000)}
		require.NoError(t, d.Register(ctxT(t, 20*time.Second), inst), "round %d", round)
		// The delete reaches the server; its reply, and those after it,
		// are lost until the connection is reset a varied time later.
		hold := time.Duration(50+(round*29)%150) * time.Millisecond
		lost1, lost2 := p1.LoseReplies(hold), p2.LoseReplies(hold)
		uctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := d.Unregister(uctx, "api", "a")
		cancel()
		if err != nil {
			require.ErrorIs(t, err, zr.ErrReleaseDeferred, "round %d", round)
		}
		require.NoError(t, d.Register(ctxT(t, 20*time.Second), inst), "round %d", round)
		<-lost1
		<-lost2
		_, st, w, err := obs.GetW(path)
		require.NoError(t, err, "round %d: in place once Register returned", round)
		// The background delete, when it was not called off, runs within
		// the retry policy's first wait after the reconnection.
		for quiet := time.After(400 * time.Millisecond); w != nil; {
			select {
			case ev := <-w:
				require.NotEqual(t, zk.EventNodeDeleted, ev.Type, "round %d: the registration was removed after Register returned", round)
				_, _, w, err = obs.GetW(path)
				require.NoError(t, err, "round %d", round)
			case <-quiet:
				w = nil
			}
		}
		_, st2, err := obs.Get(path)
		require.NoError(t, err, "round %d", round)
		require.Equal(t, st.Czxid, st2.Czxid, "round %d: the same node", round)
	}
}

// A Type change whose old node's delete is left to the background (ctx
// had ended) still ends with one node, of the new kind: the new keeper
// calls the background delete off, or lets the one in flight finish, and
// replaces an old node it finds.
func TestDiscovery_ATypeChangeWhoseDeleteIsDeferredEndsInTheNewKind(t *testing.T) {
	c := server(t)
	obs := raw(t, c)
	base := testPath(t)
	cl := connect(t, c, nil)
	d := discovery.New(cl.Session, base)
	defer d.Close(context.Background())
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	typ := discovery.Dynamic
	require.NoError(t, d.Register(ctxT(t, 10*time.Second), discovery.Instance{Name: "api", ID: "a", Type: typ}))
	for round := range 20 {
		typ = map[discovery.ServiceType]discovery.ServiceType{discovery.Dynamic: discovery.Static, discovery.Static: discovery.Dynamic}[typ]
		inst := discovery.Instance{Name: "api", ID: "a", Type: typ}
		require.ErrorIs(t, d.Register(gone, inst), context.Canceled, "round %d", round)
		for range round % 4 { // a varied head start for the background delete
			runtime.Gosched()
		}
		require.NoError(t, d.Register(ctxT(t, 10*time.Second), inst), "round %d", round)
		_, seen := instanceNode(t, obs, base, "a")
		if typ == discovery.Static {
			require.Zero(t, seen.owner, "round %d: a persistent node", round)
		} else {
			require.Equal(t, cl.SessionID(), seen.owner, "round %d: an ephemeral node", round)
		}
	}
}
