package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A persistent node outlives its Session: Close after the Session's Close
// says the node was left, and names it, instead of reporting it gone. An
// ephemeral node did end with the session: Close returns nil.
func TestPersistentNode_CloseAfterSessionCloseSaysAPersistentNodeWasLeft(t *testing.T) {
	c := server(t)
	obs := raw(t, c)
	for _, mode := range []zr.CreateMode{zr.ModeEphemeral, zr.ModeEphemeralSequential, zr.ModePersistent, zr.ModePersistentSequential} {
		t.Run(mode.String(), func(t *testing.T) {
			cl := connect(t, c, nil)
			dir := testPath(t)
			n := zr.NewPersistentNode(cl.Session, dir+"/member", []byte("x"), zr.WithCreateMode(mode))
			require.NoError(t, n.Start(context.Background()))
			require.NoError(t, n.WaitInPlace(ctxT(t, 10*time.Second)))
			st, _ := n.Status()
			require.NoError(t, cl.Close())
			err := n.Close(ctxT(t, 5*time.Second))
			if mode == zr.ModeEphemeral || mode == zr.ModeEphemeralSequential {
				assert.NoError(t, err, "the node ended with the session")
				assert.Empty(t, nodesOf(t, obs, dir, "member"))
				return
			}
			require.ErrorIs(t, err, zr.ErrNodeLeft)
			assert.Contains(t, err.Error(), st.Path, "the error names the node left")
			assert.Len(t, nodesOf(t, obs, dir, "member"), 1, "the node is still there, as the error says")
			assert.ErrorIs(t, n.Close(ctxT(t, time.Second)), zr.ErrNodeLeft, "Close is idempotent")
			require.NoError(t, obs.Delete(st.Path, -1))
		})
	}
}

// A discovery Static (or Permanent) registration is a persistent node:
// unregistering it after the Session's Close says it was left.
func TestDiscovery_UnregisterAfterSessionCloseSaysAStaticInstanceWasLeft(t *testing.T) {
	c := server(t)
	obs := raw(t, c)
	base := testPath(t)
	cl := connect(t, c, nil)
	d := discovery.New(cl.Session, base)
	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "s", Type: discovery.Static}))
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "p", Type: discovery.Permanent}))
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "d"}))
	require.NoError(t, cl.Close())
	assert.ErrorIs(t, d.Unregister(ctx, "api", "s"), zr.ErrNodeLeft)
	assert.ErrorIs(t, d.Close(ctx), zr.ErrNodeLeft, "the permanent one")
	assert.ElementsMatch(t, []string{"s", "p"}, children(t, obs, base+"/api"), "both left, the dynamic one gone")
	for _, id := range []string{"s", "p"} {
		require.NoError(t, obs.Delete(base+"/api/"+id, -1))
	}
}

// GroupMember.Start honours its ctx while the Session is cut off from the
// server: it returns ctx's error within a bound, and its clean-up goes on
// in the background, so that no member node is left once the connection
// is back.
func TestGroupMember_StartReturnsAtItsDeadlineWhileCutOff(t *testing.T) {
	c := server(t)
	obs := raw(t, c)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()})
	path := testPath(t)
	const bound = 1500 * time.Millisecond // a loaded machine's scheduling, not the clean-up's requests
	var timedOut int
	var slowest time.Duration
	defer func() {
		t.Logf("Start ran out of time in %d of 20 rounds; slowest return %v past its deadline", timedOut, slowest)
	}()
	for round := range 20 {
		d := time.Duration(50+(round*37)%450) * time.Millisecond
		if round == 19 {
			d = time.Second // the deadline of the report
		}
		id := fmt.Sprintf("m%02d", round)
		g := zr.NewGroupMember(cl.Session, path, id, []byte("x"))
		ctx, cancel := context.WithTimeout(context.Background(), d)
		cut := make(chan struct{})
		if round%2 == 0 {
			proxy.Blackhole()
			close(cut)
		} else { // cut off while Start runs, at a varied point
			time.AfterFunc(time.Duration(round%7)*3*time.Millisecond, func() { proxy.Blackhole(); close(cut) })
		}
		start := time.Now()
		err := g.Start(ctx)
		took := time.Since(start)
		cancel()
		require.Less(t, took, d+bound, "round %d: Start with a %v deadline returned after %v", round, d, took)
		slowest = max(slowest, took-d)
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded, "round %d", round)
			timedOut++
		}
		closeCtx, cancelClose := context.WithTimeout(context.Background(), d)
		start = time.Now()
		cerr := g.Close(closeCtx)
		took = time.Since(start)
		cancelClose()
		require.Less(t, took, d+bound, "round %d: Close with a %v deadline returned after %v", round, d, took)
		if cerr != nil {
			require.ErrorIs(t, cerr, zr.ErrReleaseDeferred, "round %d", round)
		}
		<-cut
		proxy.Heal()
		require.Eventually(t, func() bool {
			_, _, err := obs.Get(path + "/" + id)
			return errors.Is(err, zk.ErrNoNode)
		}, 10*time.Second, 10*time.Millisecond, "round %d: the member's node is deleted once the connection is back", round)
	}
	require.Eventually(t, func() bool {
		kids, _, err := obs.Children(path)
		return errors.Is(err, zk.ErrNoNode) || (err == nil && len(kids) == 0)
	}, 10*time.Second, 10*time.Millisecond, "no member left")
}

// starter is a recipe that starts once and closes.
type starter struct {
	name   string
	start  func(context.Context) error
	close  func()
	closed error // what Start returns after Close
}

func starters(s *zr.Session, path string) []starter {
	tc := zr.NewTreeCache(s, path)
	nc := zr.NewNodeCache(s, path)
	g := zr.NewGroupMember(s, path+"/group", "m", []byte("x"))
	pn := zr.NewPersistentNode(s, path+"/node", []byte("x"))
	sc := discovery.New(s, path+"/services").NewCache("api")
	return []starter{
		{"TreeCache", tc.Start, func() { _ = tc.Close(context.Background()) }, zr.ErrClosed},
		{"NodeCache", nc.Start, func() { _ = nc.Close(context.Background()) }, zr.ErrClosed},
		{"GroupMember", g.Start, func() { _ = g.Close(context.Background()) }, zr.ErrClosed},
		{"PersistentNode", func(context.Context) error { return pn.Start(context.Background()) }, func() { _ = pn.Close(context.Background()) }, zr.ErrClosed},
		{"ServiceCache", sc.Start, func() { _ = sc.Close(context.Background()) }, discovery.ErrClosed},
	}
}

// Start after Close, or racing it, says the recipe is closed (ErrClosed),
// never that it was started before: it was not.
func TestKeepers_StartAfterOrRacingCloseReturnsErrClosed(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	for _, r := range starters(cl.Session, path) {
		r.close()
		err := r.start(ctx)
		assert.ErrorIs(t, err, r.closed, "%s: Start after Close", r.name)
	}
	for round := range 20 {
		for _, r := range starters(cl.Session, fmt.Sprintf("%s/r%d", path, round)) {
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				for range round % 4 { // a varied head start for Start
					runtime.Gosched()
				}
				r.close()
			}()
			err := r.start(ctx)
			<-closed
			r.close() // when Start won, this Close stops what it started
			if err != nil {
				assert.ErrorIs(t, err, r.closed, "round %d: %s: Start racing Close", round, r.name)
			}
		}
	}
}
