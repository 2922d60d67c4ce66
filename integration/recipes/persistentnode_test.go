package recipes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

// startNode starts a PersistentNode at dir/name and waits until it is in
// place; it is closed when the test ends.
func startNode(t *testing.T, s *zr.Session, path string, data string, mode zr.CreateMode) *zr.PersistentNode {
	t.Helper()
	n := zr.NewPersistentNode(s, path, []byte(data), zr.WithCreateMode(mode))
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	require.NoError(t, n.WaitInPlace(ctxT(t, 20*time.Second)))
	return n
}

// nodesOf lists, from outside, the nodes under dir whose name contains
// name, with their owners and data. It may fail the test: call it on the
// test's goroutine (tryNodesOf in a condition of require.Eventually).
func nodesOf(t *testing.T, obs *zk.Conn, dir, name string) map[string]nodeSeen {
	t.Helper()
	// The observer's own connection may drop on a busy machine: a lost
	// connection is retried, for up to 10 s.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := tryNodesOf(obs, dir, name)
		if err == nil || !errors.Is(err, zk.ErrConnectionClosed) || time.Now().After(deadline) {
			require.NoError(t, err, "list %s", dir)
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tryNodesOf(obs *zk.Conn, dir, name string) (map[string]nodeSeen, error) {
	out := map[string]nodeSeen{}
	kids, _, err := obs.Children(dir)
	if err == zk.ErrNoNode {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		if !strings.Contains(k, name) {
			continue
		}
		data, st, err := obs.Get(dir + "/" + k)
		if err == zk.ErrNoNode {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[k] = nodeSeen{owner: st.EphemeralOwner, data: string(data)}
	}
	return out, nil
}

// mkdirsRetry creates path and its missing ancestors as persistent nodes,
// again if a container ancestor is reaped meanwhile.
func mkdirsRetry(t *testing.T, obs *zk.Conn, path string) {
	t.Helper()
	for try := 0; ; try++ {
		var err error
		for i := 1; i <= len(path); i++ {
			if i < len(path) && path[i] != '/' {
				continue
			}
			if _, err = obs.Create(path[:i], nil, 0, zk.WorldACL(zk.PermAll)); err == zk.ErrNodeExists {
				err = nil
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			return
		}
		require.Less(t, try, 5, "create %s: %v", path, err)
	}
}

type nodeSeen struct {
	owner int64
	data  string
}

// onlyNodeOwnedBy waits until exactly one node named like name is under
// dir, owned by the Session's current ZooKeeper session, and returns it;
// it fails the test as soon as two are seen.
func onlyNodeOwnedBy(t *testing.T, obs *zk.Conn, s *zr.Session, dir, name string, within time.Duration) (string, nodeSeen) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		nodes := nodesOf(t, obs, dir, name)
		require.LessOrEqual(t, len(nodes), 1, "never two copies of one node: %v", nodes)
		for k, n := range nodes {
			if n.owner == s.SessionID() && s.State() != zr.StateSuspended {
				return k, n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no node %s/%s* of session 0x%x within %v: %v", dir, name, s.SessionID(), within, nodes)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownGoroutinesOnly ignores, in a goroutine-leak check, what the recipe
// under test cannot have started: the Session's idle request workers, and
// the goroutines of a go-zookeeper connection that reconnected meanwhile
// (the observer's, on a busy machine).
var ownGoroutinesOnly = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/zkrecipes/zkrecipes.(*Session).work"),
	goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
	goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
	goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).loop.func2"),
}

var nodeModes = []zr.CreateMode{zr.ModeEphemeral, zr.ModeEphemeralSequential}

func TestPersistentNode_ComesBackAfterSessionExpiryNeverDuplicated(t *testing.T) {
	c := server(t)
	for _, mode := range nodeModes {
		t.Run(mode.String(), func(t *testing.T) {
			cl := connect(t, c, nil)
			obs := raw(t, c)
			dir := testPath(t)
			n := startNode(t, cl.Session, dir+"/member", "v1", mode)
			old, _ := onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", 5*time.Second)
			oldID := cl.SessionID()
			st, changed := n.Status()
			require.True(t, st.InPlace)
			cl.expire(t)
			select { // the status says so: the node went with the session
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("Status did not change after the session expired")
			}
			// one session timeout (4 s) plus a retry
			start := time.Now()
			name, seen := onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", 4*time.Second+2*time.Second)
			t.Logf("node back %v after the expiry", time.Since(start))
			assert.NotEqual(t, oldID, cl.SessionID())
			assert.Equal(t, "v1", seen.data)
			if mode == zr.ModeEphemeralSequential {
				assert.NotEqual(t, old, name, "a new sequential node")
				assert.True(t, strings.HasPrefix(name, "_c_"), "protected name: %s", name)
			}
			require.NoError(t, n.WaitInPlace(ctxT(t, 5*time.Second)))
			st, _ = n.Status()
			assert.Equal(t, dir+"/"+name, st.Path)
		})
	}
}

func TestPersistentNode_ComesBackWhenDeletedByHand(t *testing.T) {
	c := server(t)
	for _, mode := range nodeModes {
		t.Run(mode.String(), func(t *testing.T) {
			cl := connect(t, c, nil)
			obs := raw(t, c)
			dir := testPath(t)
			startNode(t, cl.Session, dir+"/member", "v1", mode)
			for i := 0; i < 3; i++ {
				name, _ := onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", 5*time.Second)
				_, st, err := obs.Get(dir + "/" + name)
				require.NoError(t, err)
				require.NoError(t, obs.Delete(dir+"/"+name, -1))
				require.Eventually(t, func() bool {
					_, st2, err := obs.Get(dir + "/" + name)
					if mode == zr.ModeEphemeral {
						return err == nil && st2.Czxid != st.Czxid
					}
					nodes, err := tryNodesOf(obs, dir, "member")
					return err == nil && len(nodes) == 1
				}, 5*time.Second, 5*time.Millisecond, "node made again")
			}
			onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", time.Second)
		})
	}
}

func TestPersistentNode_SurvivesABlackholeNeverDuplicated(t *testing.T) {
	c := server(t)
	for _, mode := range nodeModes {
		t.Run(mode.String(), func(t *testing.T) {
			proxy := zktest.NewProxy(t, c.Servers()[0])
			cl := connect(t, c, []string{proxy.Addr()})
			obs := raw(t, c)
			dir := testPath(t)
			n := startNode(t, cl.Session, dir+"/member", "v1", mode)
			onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", 5*time.Second)
			sw := watchStates(t, cl.Session)

			// Short: the session survives, and so does the node.
			proxy.Blackhole()
			sw.next(t, 10*time.Second, zr.StateSuspended)
			require.Eventually(t, func() bool { st, _ := n.Status(); return !st.InPlace }, 5*time.Second, 5*time.Millisecond,
				"not in place while suspended")
			proxy.Heal()
			sw.next(t, 10*time.Second, zr.StateReconnected)
			require.NoError(t, n.WaitInPlace(ctxT(t, 10*time.Second)))
			onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", time.Second)

			// Longer than the session timeout: the server expires the
			// session; the node comes back under the next one.
			proxy.Blackhole()
			sw.next(t, 10*time.Second, zr.StateSuspended)
			require.Eventually(t, func() bool { nodes, err := tryNodesOf(obs, dir, "member"); return err == nil && len(nodes) == 0 }, 15*time.Second, 20*time.Millisecond,
				"the server expires the session and its node")
			proxy.Heal()
			start := time.Now()
			onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", 4*time.Second+2*time.Second)
			t.Logf("node back %v after the heal", time.Since(start))
			require.NoError(t, n.WaitInPlace(ctxT(t, 10*time.Second)))
		})
	}
}

func TestPersistentNode_SetDataReachesTheNodeAndItsNextCopies(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	obs := raw(t, c)
	dir := testPath(t)
	n := startNode(t, cl.Session, dir+"/member", "v1", zr.ModeEphemeral)
	require.NoError(t, n.SetData(ctxT(t, 5*time.Second), []byte("v2")))
	_, seen := onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", time.Second)
	assert.Equal(t, "v2", seen.data)
	cl.expire(t)
	require.Eventually(t, func() bool {
		nodes, err := tryNodesOf(obs, dir, "member")
		return err == nil && len(nodes) == 1 && nodes["member"].owner == cl.SessionID()
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, "v2", nodesOf(t, obs, dir, "member")["member"].data, "the new copy holds the data last set")
}

func TestPersistentNode_AdoptsANodeAnotherClientMade(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	obs := raw(t, c)
	dir := testPath(t)
	mkdirsRetry(t, obs, dir)
	_, err := obs.Create(dir+"/member", []byte("theirs"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	startNode(t, cl.Session, dir+"/member", "ours", zr.ModePersistent)
	data, _, err := obs.Get(dir + "/member")
	require.NoError(t, err)
	assert.Equal(t, "ours", string(data), "adopted and overwritten, as Curator does")
}

func TestPersistentNode_CloseLeavesNoNodeAndNoGoroutine(t *testing.T) {
	c := server(t)
	for _, mode := range []zr.CreateMode{zr.ModeEphemeral, zr.ModeEphemeralSequential, zr.ModePersistent, zr.ModePersistentSequential} {
		t.Run(mode.String(), func(t *testing.T) {
			cl := connect(t, c, nil)
			obs := raw(t, c)
			dir := testPath(t)
			ignore := goleak.IgnoreCurrent()
			n := zr.NewPersistentNode(cl.Session, dir+"/member", []byte("x"), zr.WithCreateMode(mode))
			require.NoError(t, n.Start(context.Background()))
			require.NoError(t, n.WaitInPlace(ctxT(t, 10*time.Second)))
			require.Len(t, nodesOf(t, obs, dir, "member"), 1)
			require.NoError(t, n.Close(ctxT(t, 5*time.Second)))
			assert.Empty(t, nodesOf(t, obs, dir, "member"), "Close deletes the node")
			st, _ := n.Status()
			assert.False(t, st.InPlace)
			assert.ErrorIs(t, n.WaitInPlace(ctxT(t, time.Second)), zr.ErrClosed)
			assert.ErrorIs(t, n.Start(context.Background()), zr.ErrNodeStarted)
			goleak.VerifyNone(t, append(ownGoroutinesOnly, ignore)...)
		})
	}
}

func TestPersistentNode_SessionCloseEndsIt(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	n := startNode(t, cl.Session, testPath(t)+"/member", "x", zr.ModeEphemeral)
	require.NoError(t, cl.Close())
	assert.ErrorIs(t, n.WaitInPlace(ctxT(t, 5*time.Second)), zr.ErrClosed)
	assert.NoError(t, n.Close(ctxT(t, time.Second)))
}

func TestPersistentNode_ACreateWhoseReplyIsLostMakesOneNode(t *testing.T) {
	c := server(t)
	for _, mode := range nodeModes {
		t.Run(mode.String(), func(t *testing.T) {
			proxy := zktest.NewProxy(t, c.Servers()[0])
			cl := connect(t, c, []string{proxy.Addr()})
			obs := raw(t, c)
			dir := testPath(t)
			mkdirsRetry(t, obs, dir)
			// The keeper's first request reads the node (or lists dir for a
			// protected name); the second, the create, loses its reply.
			lost := proxy.LoseRepliesAfter(1, 300*time.Millisecond)
			n := zr.NewPersistentNode(cl.Session, dir+"/member", []byte("x"), zr.WithCreateMode(mode))
			require.NoError(t, n.Start(context.Background()))
			t.Cleanup(func() { _ = n.Close(context.Background()) })
			<-lost
			require.NoError(t, n.WaitInPlace(ctxT(t, 20*time.Second)))
			onlyNodeOwnedBy(t, obs, cl.Session, dir, "member", 5*time.Second)
			for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				require.Len(t, nodesOf(t, obs, dir, "member"), 1, "one node, and only one, from then on")
			}
		})
	}
}
