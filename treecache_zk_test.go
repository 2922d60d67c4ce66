package zkrecipes

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nextTreeEvent returns the cache's next event, failing the test if none
// comes within 10 seconds.
func nextTreeEvent(t *testing.T, c *TreeCache) CacheEvent {
	t.Helper()
	select {
	case ev, ok := <-c.Events():
		require.True(t, ok, "events closed")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return CacheEvent{}
}

func TestZKTreeCacheLoadsTheTreeThenReportsEachChangeWithItsStat(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	root := "/zkt/treecache-" + newUUID()
	acl := zk.WorldACL(zk.PermAll)
	_, _ = raw.Create("/zkt", nil, 0, acl)
	for _, p := range []string{root, root + "/a", root + "/a/x", root + "/b"} {
		_, err := raw.Create(p, []byte(p), 0, acl)
		require.NoError(t, err)
	}
	c := NewTreeCache(s, root)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))
	assert.Equal(t, 4, c.Len())
	kids, ok := c.Children(root)
	require.True(t, ok)
	assert.Equal(t, []string{"a", "b"}, kids)
	n, ok := c.Get(root + "/a/x")
	require.True(t, ok)
	assert.Equal(t, root+"/a/x", string(n.Data))

	var created []string
	for {
		ev := nextTreeEvent(t, c)
		if ev.Kind == CacheInitialized {
			break
		}
		require.Equal(t, NodeCreated, ev.Kind)
		created = append(created, ev.Node.Path)
	}
	assert.Equal(t, root, created[0], "parents first")
	assert.ElementsMatch(t, []string{root, root + "/a", root + "/a/x", root + "/b"}, created)

	st, err := raw.Set(root+"/a/x", []byte("two"), -1)
	require.NoError(t, err)
	ev := nextTreeEvent(t, c)
	require.Equal(t, NodeChanged, ev.Kind)
	assert.Equal(t, root+"/a/x", ev.Node.Path)
	assert.Equal(t, "two", string(ev.Node.Data))
	assert.Equal(t, st.Mzxid, ev.Node.Stat.Mzxid)
	assert.Equal(t, st.Czxid, ev.Node.Stat.Czxid)
	assert.Equal(t, int32(1), ev.Node.Stat.Version)

	_, err = raw.Create(root+"/b/new", []byte("n"), 0, acl)
	require.NoError(t, err)
	ev = nextTreeEvent(t, c)
	require.Equal(t, NodeCreated, ev.Kind)
	assert.Equal(t, root+"/b/new", ev.Node.Path)
	assert.Equal(t, "n", string(ev.Node.Data))

	require.NoError(t, raw.Delete(root+"/a/x", -1))
	ev = nextTreeEvent(t, c)
	require.Equal(t, NodeDeleted, ev.Kind)
	assert.Equal(t, root+"/a/x", ev.Node.Path)
	assert.Equal(t, "two", string(ev.Node.Data), "a deletion carries the node as last seen")
	_, ok = c.Get(root + "/a/x")
	assert.False(t, ok)
	kids, _ = c.Children(root + "/a")
	assert.Empty(t, kids)

	// The whole tree deleted, then the root created again.
	for _, p := range []string{root + "/b/new", root + "/b", root + "/a", root} {
		require.NoError(t, raw.Delete(p, -1))
	}
	require.Eventually(t, func() bool { return c.Len() == 0 }, 10*time.Second, time.Millisecond)
	_, err = raw.Create(root, []byte("again"), 0, acl)
	require.NoError(t, err)
	require.Eventually(t, func() bool { n, ok := c.Get(root); return ok && string(n.Data) == "again" }, 10*time.Second, time.Millisecond,
		"the root's creation is watched for")
	_ = raw.Delete(root, -1)
	require.NoError(t, c.Close(ctx))
	assert.NoError(t, c.Err())
}

func TestZKTreeCacheHonoursTheDepthLimitAndThePathFilter(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	root := "/zkt/treecache-" + newUUID()
	acl := zk.WorldACL(zk.PermAll)
	_, _ = raw.Create("/zkt", nil, 0, acl)
	for _, p := range []string{root, root + "/a", root + "/a/deep", root + "/skip", root + "/skip/x"} {
		_, err := raw.Create(p, nil, 0, acl)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, p := range []string{root + "/a/deep", root + "/a", root + "/skip/x", root + "/skip", root + "/c", root} {
			_ = raw.Delete(p, -1)
		}
	})
	c := NewTreeCache(s, root, WithMaxDepth(1), WithPathFilter(func(p string) bool { return p != root+"/skip" }))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))
	assert.ElementsMatch(t, []string{root, root + "/a"}, keys(c.Snapshot()))
	_, err := raw.Create(root+"/c", nil, 0, acl)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok := c.Get(root + "/c"); return ok }, 10*time.Second, time.Millisecond)
	_, ok := c.Get(root + "/a/deep")
	assert.False(t, ok, "below the depth limit")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestZKTreeCacheStartTwiceFailsAndSessionCloseStopsItWithErrClosed(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	c := NewTreeCache(s, "/zkt/treecache-"+newUUID())
	require.NoError(t, c.Start(ctx))
	assert.ErrorIs(t, c.Start(ctx), ErrCacheStarted)
	assert.Zero(t, c.Len(), "a missing root is an empty tree")
	require.NoError(t, s.Close())
	for range c.Events() { // closed when the cache stops
	}
	assert.ErrorIs(t, c.Err(), ErrClosed)
	require.NoError(t, c.Close(ctx))
	assert.ErrorIs(t, NewTreeCache(s, "/x").Start(ctx), ErrClosed)
}

// watchCountingConn counts, in what a Session writes, the getData and
// getChildren requests under prefix that set a watch and those that do not.
type watchCountingConn struct {
	net.Conn
	prefix          string
	watching, plain *atomic.Int32
}

func (c *watchCountingConn) Write(p []byte) (int, error) {
	for q := p; len(q) >= 16; {
		n := int(binary.BigEndian.Uint32(q[0:4])) + 4
		l := int(binary.BigEndian.Uint32(q[12:16]))
		if n > len(q) || 16+l+1 > n {
			break
		}
		op := binary.BigEndian.Uint32(q[8:12])
		if (op == 4 || op == 12) && strings.HasPrefix(string(q[16:16+l]), c.prefix) {
			if q[16+l] != 0 {
				c.watching.Add(1)
			} else {
				c.plain.Add(1)
			}
		}
		q = q[n:]
	}
	return c.Conn.Write(p)
}

// On one-shot watches (no wire layer), after a lost connection under the
// same session, the cache reads the tree again without setting a second
// watch on every node (go-zookeeper
// would keep a channel for each), and the watches it had still report
// the changes that follow.
func TestZKTreeCacheResyncUnderTheSameSessionSetsNoSecondWatch(t *testing.T) {
	raw := zkRaw(t)
	root := "/zkt/treecache-" + newUUID()
	acl := zk.WorldACL(zk.PermAll)
	_, _ = raw.Create("/zkt", nil, 0, acl)
	kids := []string{"a", "b", "c"}
	for _, p := range append([]string{""}, kids...) {
		_, err := raw.Create(strings.TrimSuffix(root+"/"+p, "/"), nil, 0, acl)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, k := range kids {
			_ = raw.Delete(root+"/"+k, -1)
		}
		_ = raw.Delete(root, -1)
	})
	var watching, plain atomic.Int32
	var mu sync.Mutex
	var conns []net.Conn
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		return &watchCountingConn{Conn: c, prefix: root, watching: &watching, plain: &plain}, nil
	}
	ctx, s := zkSession(t, 30*time.Second, WithDialer(dial), WithWireLayer(false)) // one-shot watches
	c := NewTreeCache(s, root)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))
	assert.Equal(t, int32(8), watching.Load(), "the load: a data and a children watch per node")
	assert.Zero(t, plain.Load())
	for ev := nextTreeEvent(t, c); ev.Kind != CacheInitialized; ev = nextTreeEvent(t, c) {
	}

	id := s.SessionID()
	mu.Lock()
	require.NoError(t, conns[len(conns)-1].Close())
	mu.Unlock()
	for ev := nextTreeEvent(t, c); ev.Kind != CacheReconnected; ev = nextTreeEvent(t, c) {
	}
	require.Equal(t, id, s.SessionID(), "the same session")
	require.Eventually(t, func() bool { return plain.Load() == 8 }, 10*time.Second, time.Millisecond, "the resync reads every node")
	assert.Equal(t, int32(8), watching.Load(), "and sets no watch again")

	for _, k := range kids {
		_, err := raw.Set(root+"/"+k, []byte("after"), -1)
		require.NoError(t, err)
	}
	_, err := raw.Create(root+"/a/new", nil, 0, acl)
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Delete(root+"/a/new", -1) })
	require.Eventually(t, func() bool {
		for _, k := range kids {
			if n, ok := c.Get(root + "/" + k); !ok || string(n.Data) != "after" {
				return false
			}
		}
		_, ok := c.Get(root + "/a/new")
		return ok
	}, 10*time.Second, time.Millisecond, "the watches set before the reconnection report what follows")
}

// treeOps records the requests a Session makes, as "op path".
type treeOps struct {
	mu  sync.Mutex
	ops []string
}

func (l *treeOps) TraceOp(ev TraceEvent) {
	l.mu.Lock()
	l.ops = append(l.ops, ev.Op+" "+ev.Path)
	l.mu.Unlock()
}

func (l *treeOps) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops := l.ops
	l.ops = nil
	return ops
}

// On one-shot watches (no wire layer), a change costs what it needs: a
// data change one getData of the node (no listing of its siblings), a new
// leaf one listing of its parent and its own two reads, a deletion one
// listing of its parent (and at most one getData of the node, when its
// notification comes apart from its parent's).
func TestZKTreeCacheOnOneShotWatchesReadsOnlyWhatAChangeNeeds(t *testing.T) {
	raw := zkRaw(t)
	root := "/zkt/treecache-" + newUUID()
	acl := zk.WorldACL(zk.PermAll)
	_, _ = raw.Create("/zkt", nil, 0, acl)
	for _, p := range []string{root, root + "/a", root + "/b", root + "/c"} {
		_, err := raw.Create(p, nil, 0, acl)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, p := range []string{root + "/a/new", root + "/a", root + "/b", root + "/c", root} {
			_ = raw.Delete(p, -1)
		}
	})
	log := &treeOps{}
	ctx, s := zkSession(t, 30*time.Second, WithTracer(log), WithWireLayer(false))
	c := NewTreeCache(s, root)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))
	ops := log.take()
	assert.Len(t, ops, 8, "the load: one getData and one getChildren per node: %v", ops)
	for ev := nextTreeEvent(t, c); ev.Kind != CacheInitialized; ev = nextTreeEvent(t, c) {
	}

	_, err := raw.Set(root+"/b", []byte("x"), -1)
	require.NoError(t, err)
	require.Equal(t, NodeChanged, nextTreeEvent(t, c).Kind)
	assert.Equal(t, []string{"getData " + root + "/b"}, log.take(), "a data change")

	_, err = raw.Create(root+"/a/new", nil, 0, acl)
	require.NoError(t, err)
	require.Equal(t, NodeCreated, nextTreeEvent(t, c).Kind)
	assert.ElementsMatch(t, []string{"getChildren " + root + "/a", "getData " + root + "/a/new", "getChildren " + root + "/a/new"}, log.take(), "a new leaf")

	require.NoError(t, raw.Delete(root+"/c", -1))
	require.Equal(t, NodeDeleted, nextTreeEvent(t, c).Kind)
	var extra []string
	require.Eventually(t, func() bool { extra = append(extra, log.take()...); return slices.Contains(extra, "getChildren "+root) },
		5*time.Second, time.Millisecond)
	assert.Subset(t, []string{"getChildren " + root, "getData " + root + "/c"}, extra, "a deletion: %v", extra)
	assert.LessOrEqual(t, len(extra), 2, "%v", extra)
}

// Under a namespace, paths are the Session's: the cache reports and finds
// nodes without the namespace, and follows their changes.
func TestZKTreeCacheWorksUnderANamespace(t *testing.T) {
	raw := zkRaw(t)
	ns := "/zkt/ns-" + newUUID()
	acl := zk.WorldACL(zk.PermAll)
	_, _ = raw.Create("/zkt", nil, 0, acl)
	for _, p := range []string{ns, ns + "/cfg", ns + "/cfg/a"} {
		_, err := raw.Create(p, []byte("v"), 0, acl)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, p := range []string{ns + "/cfg/b", ns + "/cfg/a", ns + "/cfg", ns} {
			_ = raw.Delete(p, -1)
		}
	})
	ctx, s := zkSession(t, 30*time.Second, WithNamespace(ns))
	c := NewTreeCache(s, "/cfg")
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))
	assert.ElementsMatch(t, []string{"/cfg", "/cfg/a"}, keys(c.Snapshot()))
	_, err := raw.Create(ns+"/cfg/b", []byte("new"), 0, acl)
	require.NoError(t, err)
	_, err = raw.Set(ns+"/cfg/a", []byte("changed"), -1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		a, okA := c.Get("/cfg/a")
		_, okB := c.Get("/cfg/b")
		return okA && okB && string(a.Data) == "changed"
	}, 10*time.Second, time.Millisecond)
}

// On its persistent recursive watch, the cache sets no watch with a read,
// loads the tree with a getData per node and a getChildren only of the
// nodes that have children, and then a change costs what it needs: a data
// change or a new node one getData of the node, a deletion nothing.
func TestZKTreeCacheOnAPersistentWatchSetsNoWatchAndReadsOnlyWhatAChangeNeeds(t *testing.T) {
	raw := zkRaw(t)
	root := "/zkt/treecache-" + newUUID()
	acl := zk.WorldACL(zk.PermAll)
	_, _ = raw.Create("/zkt", nil, 0, acl)
	for _, p := range []string{root, root + "/a", root + "/b", root + "/c", root + "/a/x"} {
		_, err := raw.Create(p, nil, 0, acl)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, p := range []string{root + "/a/new", root + "/a/x", root + "/a", root + "/b", root + "/c", root} {
			_ = raw.Delete(p, -1)
		}
	})
	var watching, plain atomic.Int32
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &watchCountingConn{Conn: c, prefix: root, watching: &watching, plain: &plain}, nil
	}
	log := &treeOps{}
	ctx, s := zkSession(t, 30*time.Second, WithTracer(log), WithDialer(dial))
	c := NewTreeCache(s, root)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))
	require.True(t, c.persistent.Load(), "the cache runs on a persistent watch")
	ops := log.take()
	require.NotEmpty(t, ops)
	assert.Equal(t, "addWatch "+root, ops[0], "the watch first")
	assert.ElementsMatch(t, []string{"getData " + root, "getData " + root + "/a", "getData " + root + "/b", "getData " + root + "/c",
		"getData " + root + "/a/x", "getChildren " + root, "getChildren " + root + "/a"}, ops[1:],
		"then the load: a getData per node, a getChildren of the nodes with children")
	for ev := nextTreeEvent(t, c); ev.Kind != CacheInitialized; ev = nextTreeEvent(t, c) {
	}

	_, err := raw.Set(root+"/b", []byte("x"), -1)
	require.NoError(t, err)
	require.Equal(t, NodeChanged, nextTreeEvent(t, c).Kind)
	assert.Equal(t, []string{"getData " + root + "/b"}, log.take(), "a data change")

	_, err = raw.Create(root+"/a/new", nil, 0, acl)
	require.NoError(t, err)
	require.Equal(t, NodeCreated, nextTreeEvent(t, c).Kind)
	assert.Equal(t, []string{"getData " + root + "/a/new"}, log.take(), "a new node")

	require.NoError(t, raw.Delete(root+"/c", -1))
	require.Equal(t, NodeDeleted, nextTreeEvent(t, c).Kind)
	_, err = raw.Set(root+"/b", []byte("y"), -1) // a change after it, to see what the deletion cost
	require.NoError(t, err)
	require.Equal(t, NodeChanged, nextTreeEvent(t, c).Kind)
	assert.Equal(t, []string{"getData " + root + "/b"}, log.take(), "a deletion costs no read")
	assert.Zero(t, watching.Load(), "no read sets a watch")
	assert.Positive(t, plain.Load())
}
