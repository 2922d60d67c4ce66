package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The Session's node operations under real faults: a dropped connection
// (a blackholed proxy) and lost replies (ZOOKEEPER-1262).

// nodeOpsRig is a Session behind a fault proxy (listed twice, so that a
// reconnection is immediate) and an observer connection.
type nodeOpsRig struct {
	proxy *zktest.Proxy
	cl    *client
	obs   *zk.Conn
	dir   string
	lost  atomic.Int32 // requests of cl that failed with a lost connection
}

// lossHold is how long the proxy withholds replies before it resets the
// connection: long enough for the request under test to be written inside
// it on a busy machine, shorter than go-zookeeper's read timeout (two
// thirds of the rig's 6s session), so that the reset ends the connection.
const lossHold = time.Second

func newNodeOpsRig(t *testing.T) *nodeOpsRig {
	t.Parallel()
	c := server(t)
	g := &nodeOpsRig{proxy: zktest.NewProxy(t, c.Servers()[0]), obs: raw(t, c), dir: testPath(t) + "/" + fmt.Sprint(time.Now().UnixNano())}
	mkdirs(t, g.obs, g.dir)
	g.cl = connect(t, c, []string{g.proxy.Addr(), g.proxy.Addr()}, zr.WithSessionTimeout(6*time.Second),
		zr.WithTracer(zr.TracerFunc(func(ev zr.TraceEvent) {
			if errors.Is(ev.Err, zk.ErrConnectionClosed) {
				g.lost.Add(1)
			}
		})))
	return g
}

// lostSince reports whether a request failed with a lost connection since
// the count was n (a fault test's fault did hit).
func (g *nodeOpsRig) lostSince(n int32) bool { return g.lost.Load() > n }

// exists tells whether p exists; on the test's goroutine only.
func (g *nodeOpsRig) exists(t *testing.T, p string) bool {
	t.Helper()
	ok, _, err := g.obs.Exists(p)
	require.NoError(t, err)
	return ok
}

// A guaranteed Delete that cannot reach the server returns
// ErrDeleteDeferred and deletes the node once the connection is back; the
// Session's Close then has nothing to report.
func TestSession_GuaranteedDeleteCompletesOnceTheConnectionIsBack(t *testing.T) {
	g := newNodeOpsRig(t)
	p := g.dir + "/doomed"
	_, err := g.obs.Create(p, nil, 0, worldACL())
	require.NoError(t, err)
	_, err = g.obs.Create(p+"/child", nil, 0, worldACL())
	require.NoError(t, err)
	st := watchStates(t, g.cl.Session)

	g.proxy.Blackhole()
	require.Equal(t, zr.StateSuspended, st.next(t, 10*time.Second, zr.StateSuspended).State)
	err = g.cl.Delete(ctxT(t, 500*time.Millisecond), p, zr.WithGuaranteed(true), zr.WithDeleteChildren(true))
	require.ErrorIs(t, err, zr.ErrDeleteDeferred)
	require.True(t, g.exists(t, p), "nothing reached the server")

	g.proxy.Heal()
	require.Eventually(t, func() bool { ok, _, err := g.obs.Exists(p); return err == nil && !ok }, 20*time.Second, 20*time.Millisecond,
		"the delete went on in the background")
	require.NoError(t, g.cl.Close(), "no delete pending at Close")
}

// A guaranteed Delete still pending when the Session closes is reported
// by Close, naming its node.
func TestSession_CloseReportsAGuaranteedDeleteStillPending(t *testing.T) {
	g := newNodeOpsRig(t)
	p := g.dir + "/kept"
	_, err := g.obs.Create(p, nil, 0, worldACL())
	require.NoError(t, err)
	st := watchStates(t, g.cl.Session)

	g.proxy.Blackhole()
	t.Cleanup(g.proxy.Heal)
	require.Equal(t, zr.StateSuspended, st.next(t, 10*time.Second, zr.StateSuspended).State)
	require.ErrorIs(t, g.cl.Delete(ctxT(t, 300*time.Millisecond), p, zr.WithGuaranteed(true)), zr.ErrDeleteDeferred)
	err = g.cl.Close()
	require.ErrorIs(t, err, zr.ErrDeletePending)
	assert.Contains(t, err.Error(), p)
	assert.True(t, g.exists(t, p), "the node is still there, as Close said")
}

// A protected Create whose reply is lost finds its node by its UUID once
// reconnected: it returns the node and never makes two, whatever the
// mode.
func TestSession_ProtectedCreateWhoseReplyIsLostMakesExactlyOneNode(t *testing.T) {
	g := newNodeOpsRig(t)
	modes := []zr.CreateMode{zr.ModeEphemeralSequential, zr.ModePersistentSequential, zr.ModePersistent, zr.ModeEphemeral}
	for i := range 8 {
		round := fmt.Sprintf("round %d (%v)", i, modes[i%len(modes)])
		require.NoError(t, g.cl.Sync(ctxT(t, 20*time.Second), g.dir), round) // connected
		before := g.lost.Load()
		g.proxy.LoseReplies(lossHold)
		p, err := g.cl.Create(ctxT(t, 30*time.Second), fmt.Sprintf("%s/r%dx", g.dir, i), []byte("x"),
			zr.WithMode(modes[i%len(modes)]), zr.WithProtection(true))
		require.NoError(t, err, round)
		kids := zktest.Children(t, g.obs, g.dir)
		var mine []string
		for _, k := range kids {
			if strings.Contains(k, fmt.Sprintf("-r%dx", i)) { // the uuid, in hex, holds no "r"
				mine = append(mine, k)
			}
		}
		require.Equal(t, []string{p[len(g.dir)+1:]}, mine, round)
		require.True(t, g.lostSince(before), "%s: the create's reply was lost", round)
	}
}

// An unprotected Create whose reply is lost says that its outcome is
// unknown: it is not sent again.
func TestSession_UnprotectedCreateWhoseReplyIsLostReportsOutcomeUnknown(t *testing.T) {
	g := newNodeOpsRig(t)
	require.NoError(t, g.cl.Sync(ctxT(t, 20*time.Second), g.dir))
	g.proxy.LoseReplies(lossHold)
	_, err := g.cl.Create(ctxT(t, 30*time.Second), g.dir+"/plain", nil)
	require.ErrorIs(t, err, zr.ErrOutcomeUnknown)
	require.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.True(t, g.exists(t, g.dir+"/plain"), "the create reached the server, its reply did not come back")
}

// A transaction whose reply is lost is settled by its protected create:
// found, the transaction was applied, and Multi says so with the node's
// path; persistent or ephemeral, it is never applied twice.
func TestSession_MultiWhoseReplyIsLostIsSettledByItsProtectedCreate(t *testing.T) {
	g := newNodeOpsRig(t)
	for i, mode := range []zr.CreateMode{zr.ModePersistentSequential, zr.ModeEphemeralSequential, zr.ModePersistentSequential, zr.ModeEphemeralSequential} {
		round := fmt.Sprintf("round %d (%v)", i, mode)
		dir := fmt.Sprintf("%s/r%d", g.dir, i)
		mkdirs(t, g.obs, dir)
		_, err := g.obs.Create(dir+"/data", []byte("v0"), 0, worldACL())
		require.NoError(t, err, round)
		require.NoError(t, g.cl.Sync(ctxT(t, 20*time.Second), dir), round)
		before := g.lost.Load()
		g.proxy.LoseReplies(lossHold)
		res, err := g.cl.Multi(ctxT(t, 30*time.Second),
			zr.SetOp(dir+"/data", []byte("v1"), zr.WithVersion(0)),
			zr.CreateOp(dir+"/log-", []byte("entry"), zr.WithMode(mode), zr.WithProtection(true)))
		require.NoError(t, err, "%s: settled as applied", round)
		require.Len(t, res, 2, round)
		assert.Regexp(t, `/_c_[0-9a-f-]{36}-log-\d{10}$`, res[1].Path, round)
		assert.True(t, g.exists(t, res[1].Path), round)
		data, st, err := g.obs.Get(dir + "/data")
		require.NoError(t, err, round)
		assert.Equal(t, "v1", string(data), round)
		assert.Equal(t, int32(1), st.Version, "%s: applied once", round)
		assert.Len(t, zktest.Children(t, g.obs, dir), 2, "%s: one create, not two", round)
		require.True(t, g.lostSince(before), "%s: the transaction's reply was lost", round)
	}
}

// A guaranteed Delete deferred while cut off goes on under the next
// ZooKeeper session when the first one expired meanwhile.
func TestSession_GuaranteedDeleteCompletesAcrossASessionExpiry(t *testing.T) {
	g := newNodeOpsRig(t)
	p := g.dir + "/doomed"
	_, err := g.obs.Create(p, nil, 0, worldACL())
	require.NoError(t, err)
	st := watchStates(t, g.cl.Session)
	old := g.cl.SessionID()

	g.proxy.Blackhole()
	require.Equal(t, zr.StateSuspended, st.next(t, 10*time.Second, zr.StateSuspended).State)
	require.ErrorIs(t, g.cl.Delete(ctxT(t, 300*time.Millisecond), p, zr.WithGuaranteed(true)), zr.ErrDeleteDeferred)
	assert.Equal(t, []string{p}, g.cl.PendingDeletes())
	g.cl.expire(t)
	g.proxy.Heal()
	require.Equal(t, zr.StateLost, st.next(t, 20*time.Second, zr.StateLost).State)
	require.Eventually(t, func() bool { return len(g.cl.PendingDeletes()) == 0 }, 20*time.Second, 20*time.Millisecond,
		"the delete went on under the new session, and its reply came")
	assert.False(t, g.exists(t, p), "the node is gone")
	assert.NotEqual(t, old, g.cl.SessionID())
	require.NoError(t, g.cl.Close())
}

// Writes whose reply is lost: an unversioned Set and a Delete are sent
// again (the Delete then finds the node gone: done); a versioned Set that
// was applied cannot be told from another client's write, and says its
// outcome is unknown.
func TestSession_WritesWhoseReplyIsLost(t *testing.T) {
	g := newNodeOpsRig(t)
	p := g.dir + "/n"
	_, err := g.obs.Create(p, []byte("v0"), 0, worldACL())
	require.NoError(t, err)
	ctx := ctxT(t, 60*time.Second)

	require.NoError(t, g.cl.Sync(ctx, g.dir))
	before := g.lost.Load()
	g.proxy.LoseReplies(lossHold)
	stat, err := g.cl.Set(ctx, p, []byte("v1"))
	require.NoError(t, err, "sent again once reconnected")
	require.True(t, g.lostSince(before))
	assert.Equal(t, int32(2), stat.Version, "applied twice, the same data")

	require.NoError(t, g.cl.Sync(ctx, g.dir))
	before = g.lost.Load()
	g.proxy.LoseReplies(lossHold)
	_, err = g.cl.Set(ctx, p, []byte("v2"), zr.WithVersion(2))
	require.ErrorIs(t, err, zr.ErrOutcomeUnknown)
	require.True(t, g.lostSince(before))
	data, _, err := g.obs.Get(p)
	require.NoError(t, err)
	assert.Equal(t, "v2", string(data), "it was applied, and not twice")

	require.NoError(t, g.cl.Sync(ctx, g.dir))
	before = g.lost.Load()
	g.proxy.LoseReplies(lossHold)
	require.NoError(t, g.cl.Delete(ctx, p), "sent again, found gone: done")
	require.True(t, g.lostSince(before))
	assert.False(t, g.exists(t, p))

	// A versioned Delete that was applied: the node it was meant for is
	// found gone, which is done, not a failure of its version.
	_, err = g.obs.Create(p, nil, 0, worldACL())
	require.NoError(t, err)
	require.NoError(t, g.cl.Sync(ctx, g.dir))
	before = g.lost.Load()
	g.proxy.LoseReplies(lossHold)
	require.NoError(t, g.cl.Delete(ctx, p, zr.WithVersion(0)), "settled by a read: gone, done")
	require.True(t, g.lostSince(before))
	assert.False(t, g.exists(t, p))
}

// Create's container and TTL modes make nodes the server reaps: a
// container once its last child is gone, a TTL node once it has had no
// change and no child for its TTL. TTL nodes need a server started with
// zookeeper.extendedTypesEnabled; the reaper is made to run often.
func TestSession_CreateMakesContainerAndTTLNodesTheServerReaps(t *testing.T) {
	c := ttlServer(t)
	t.Parallel()
	ctx := ctxT(t, 2*time.Minute)
	cl := connect(t, c, nil)
	obs := raw(t, c)
	gone := func(p string) func() bool {
		return func() bool { ok, _, err := obs.Exists(p); return err == nil && !ok }
	}

	_, err := cl.Create(ctx, "/box", nil, zr.WithMode(zr.ModeContainer))
	require.NoError(t, err)
	_, err = cl.Create(ctx, "/box/x", nil)
	require.NoError(t, err)
	require.NoError(t, cl.Delete(ctx, "/box/x"))
	require.Eventually(t, gone("/box"), 30*time.Second, 50*time.Millisecond, "an empty container is reaped")

	ttl, err := cl.Create(ctx, "/ttl", []byte("x"), zr.WithMode(zr.ModePersistentWithTTL), zr.WithTTL(300*time.Millisecond))
	require.NoError(t, err)
	seq, err := cl.Create(ctx, "/ttl-", nil, zr.WithMode(zr.ModePersistentSequentialWithTTL), zr.WithTTL(300*time.Millisecond), zr.WithProtection(true))
	require.NoError(t, err)
	assert.Regexp(t, `^/_c_[0-9a-f-]{36}-ttl-\d{10}$`, seq)
	_, err = cl.Create(ctx, "/kept", nil) // a persistent node, beside: not reaped
	require.NoError(t, err)
	require.Eventually(t, gone(ttl), 30*time.Second, 50*time.Millisecond, "a TTL node is reaped after its TTL")
	require.Eventually(t, gone(seq), 30*time.Second, 50*time.Millisecond)
	assert.False(t, gone("/kept")(), "the reaper leaves persistent nodes alone")
}
