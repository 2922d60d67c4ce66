package recipes_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/wire"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// serverWatches counts the watches a server holds: all of them (mntr's
// zk_watch_count: data and child watches, every session) and those of
// session sid on node paths (wchc: the data-watch table; a persistent
// watch is in it too). It may run in a require.Eventually condition, off
// the test's goroutine: a failed read fails the test and counts -1.
func serverWatches(t *testing.T, c *zktest.Cluster, sid int64) (total, session int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := zktest.Mntr(ctx, c.Servers()[0])
	if !assert.NoError(t, err) {
		return -1, -1
	}
	total, err = strconv.Atoi(m["zk_watch_count"])
	if !assert.NoError(t, err, "mntr: %v", m) {
		return -1, -1
	}
	out, err := zktest.FourLetterWord(ctx, c.Servers()[0], "wchc")
	if !assert.NoError(t, err) {
		return -1, -1
	}
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "0x"):
			id, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "0x"), 16, 64)
			in = err == nil && id == sid
		case in && strings.HasPrefix(strings.TrimSpace(line), "/"):
			session++
		}
	}
	return total, session
}

// Every cache (TreeCache, NodeCache, and on them discovery's ServiceCache
// and GroupMember's view) costs the server one persistent watch for the
// whole tree it follows, and Close takes it off the server: the Session's
// watch count, and the server's, are back where they were before Start.
// (With WithWireLayer(false) the caches fall back to one-shot watches,
// which go-zookeeper cannot remove: not asserted there.)
func TestCaches_CloseLeavesNoWatchOnTheServer(t *testing.T) {
	server(t) // the suite's backend must be available
	if wireOff() {
		t.Skip("ZKRECIPES_WIRE=off: the caches run on one-shot watches, which stay after Close")
	}
	c := zktest.Start(t) // a server of its own: mntr counts every session's watches
	conn := raw(t, c)
	acl := zk.WorldACL(zk.PermAll)
	mk := func(paths ...string) {
		for _, p := range paths {
			if _, err := conn.Create(p, []byte("v"), 0, acl); err != zk.ErrNodeExists {
				require.NoError(t, err)
			}
		}
	}
	mk("/t")
	cl := connect(t, c, nil)
	// other writes (registers, joins): its watches are not the caches', and
	// it stays until the end, so that no watch of its goes meanwhile.
	other := connect(t, c, nil)
	ctx := ctxT(t, 30*time.Second)

	// ZooKeeper 3.6 to 3.8 cannot remove a persistent watch alone
	// (ZOOKEEPER-4472): the wire layer then removes every watch of the
	// connection on the path and puts back the one-shot watches go-zookeeper
	// holds there, and only those: not another session's watches on the same
	// path (the subtests beside another session).
	srvr, err := zktest.Srvr(ctx, c.Servers()[0])
	require.NoError(t, err)
	t.Logf("server %s", srvr["Zookeeper version"])

	// check runs a cache from start to close, and looks at the server's
	// watches before, while and after.
	check := func(t *testing.T, run func(t *testing.T) (closeFn func())) {
		total0, own0 := serverWatches(t, c, cl.SessionID())
		closeFn := run(t)
		total, own := serverWatches(t, c, cl.SessionID())
		t.Logf("watches on the server while the cache runs: %d more (%d of the session's data watches)", total-total0, own-own0)
		assert.Positive(t, total-total0, "the cache watches")
		assert.LessOrEqual(t, total-total0, 2, "one persistent watch for the whole tree (ZooKeeper 3.6 to 3.8 count it twice: data and child)")
		closeFn()
		require.Eventually(t, func() bool {
			total, own = serverWatches(t, c, cl.SessionID())
			return total == total0 && own == own0
		}, 5*time.Second, 10*time.Millisecond, "after Close the server holds the watches it held before: %s (was %d), the session's %s (was %d)",
			lazy(func() string { return fmt.Sprint(total) }), total0, lazy(func() string { return fmt.Sprint(own) }), own0)
	}
	t.Run("TreeCache", func(t *testing.T) {
		root := testPath(t)
		mk(root, root+"/a", root+"/b", root+"/a/x", root+"/a/y")
		check(t, func(t *testing.T) func() {
			cache := zr.NewTreeCache(cl.Session, root)
			t.Cleanup(func() { _ = cache.Close(context.Background()) }) // a failed check leaves nothing running
			require.NoError(t, cache.Start(ctx))
			require.Equal(t, 5, cache.Len())
			return func() { require.NoError(t, cache.Close(ctx)) }
		})
	})
	t.Run("TreeCache beside another session's", func(t *testing.T) {
		// A removal must not take another session's watch for this one's,
		// nor put back one the Session does not hold.
		root := testPath(t)
		mk(root, root+"/a")
		theirs := zr.NewTreeCache(other.Session, root)
		require.NoError(t, theirs.Start(ctx))
		defer theirs.Close(context.Background())
		check(t, func(t *testing.T) func() {
			cache := zr.NewTreeCache(cl.Session, root)
			t.Cleanup(func() { _ = cache.Close(context.Background()) }) // a failed check leaves nothing running
			require.NoError(t, cache.Start(ctx))
			return func() { require.NoError(t, cache.Close(ctx)) }
		})
	})
	t.Run("NodeCache", func(t *testing.T) {
		p := testPath(t)
		mk(p)
		check(t, func(t *testing.T) func() {
			cache := zr.NewNodeCache(cl.Session, p)
			t.Cleanup(func() { _ = cache.Close(context.Background()) }) // a failed check leaves nothing running
			require.NoError(t, cache.Start(ctx))
			return func() { require.NoError(t, cache.Close(ctx)) }
		})
	})
	t.Run("NodeCache of a missing node", func(t *testing.T) {
		check(t, func(t *testing.T) func() {
			cache := zr.NewNodeCache(cl.Session, testPath(t))
			t.Cleanup(func() { _ = cache.Close(context.Background()) }) // a failed check leaves nothing running
			require.NoError(t, cache.Start(ctx))
			return func() { require.NoError(t, cache.Close(ctx)) }
		})
	})
	t.Run("ServiceCache", func(t *testing.T) {
		base := testPath(t)
		d := discovery.New(other.Session, base)
		for _, id := range []string{"a", "b", "c"} {
			require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: id}))
		}
		check(t, func(t *testing.T) func() {
			cache := discovery.New(cl.Session, base).NewCache("api")
			t.Cleanup(func() { _ = cache.Close(context.Background()) }) // a failed check leaves nothing running
			require.NoError(t, cache.Start(ctx))
			awaitCache(t, cache, 5*time.Second, "a", "b", "c")
			return func() { require.NoError(t, cache.Close(ctx)) }
		})
	})
	t.Run("GroupMember", func(t *testing.T) {
		path := testPath(t)
		b := zr.NewGroupMember(other.Session, path, "b", []byte("2"))
		require.NoError(t, b.Start(ctx))
		awaitMembers(t, b, 5*time.Second, map[string]string{"b": "2"})
		require.Eventually(t, func() bool { // b watches its own node (its PersistentNode) from its background
			out, err := zktest.FourLetterWord(context.Background(), c.Servers()[0], "wchp")
			return err == nil && strings.Contains(out, path+"/b\n")
		}, 5*time.Second, 10*time.Millisecond, "the other member settles")
		total0, own0 := serverWatches(t, c, cl.SessionID())
		a := zr.NewGroupMember(cl.Session, path, "a", []byte("1"))
		t.Cleanup(func() { _ = a.Close(context.Background()) })
		require.NoError(t, a.Start(ctx))
		awaitMembers(t, a, 5*time.Second, map[string]string{"a": "1", "b": "2"})
		total, own := serverWatches(t, c, cl.SessionID())
		t.Logf("watches on the server while the member runs: %d more (%d of the session's data watches)", total-total0, own-own0)
		require.NoError(t, a.Close(ctx)) // b watches the group too
		require.Eventually(t, func() bool {
			total, own = serverWatches(t, c, cl.SessionID())
			return total == total0 && own == own0
		}, 5*time.Second, 10*time.Millisecond, "after Close the server holds the watches it held before: %s (was %d), the session's %s (was %d); %s",
			lazy(func() string { return fmt.Sprint(total) }), total0, lazy(func() string { return fmt.Sprint(own) }), own0,
			lazy(func() string {
				out, _ := zktest.FourLetterWord(context.Background(), c.Servers()[0], "wchp")
				return out
			}))
	})
}

// On a server without addWatch (before 3.6; played by an opcode no server
// knows), the caches fall back to one-shot watches: they load, and follow
// creations, changes and deletions.
func TestCaches_FallBackToOneShotWatchesOnAServerWithoutAddWatch(t *testing.T) {
	if wireOff() {
		t.Skip("ZKRECIPES_WIRE=off: the caches run on one-shot watches anyway")
	}
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	root := testPath(t)
	mkdirs(t, conn, root+"/a")
	t.Cleanup(func() { (&treeWriter{t: t, conn: conn}).deleteTree(root) })
	t.Cleanup(wire.SetAddWatchOp(999))
	removals := func() int64 { n := wire.ReadCounts(); return n.TypedRemovals + n.AnyRemovals }
	removed := removals()
	ctx := ctxT(t, 30*time.Second)
	tree := zr.NewTreeCache(cl.Session, root)
	defer tree.Close(context.Background())
	require.NoError(t, tree.Start(ctx))
	node := zr.NewNodeCache(cl.Session, root+"/a")
	defer node.Close(context.Background())
	require.NoError(t, node.Start(ctx))
	require.Equal(t, 2, tree.Len())

	_, err := conn.Create(root+"/a/b", []byte("1"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.Set(root+"/a", []byte("2"), -1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, okb := tree.Get(root + "/a/b")
		a, oka := node.Get()
		return okb && string(b.Data) == "1" && oka && string(a.Data) == "2"
	}, 10*time.Second, 5*time.Millisecond, "the caches follow a creation and a change")
	require.NoError(t, conn.Delete(root+"/a/b", -1))
	require.Eventually(t, func() bool { _, ok := tree.Get(root + "/a/b"); return !ok }, 10*time.Second, 5*time.Millisecond,
		"and a deletion")
	require.NoError(t, tree.Close(ctx))
	require.NoError(t, node.Close(ctx))
	assert.Equal(t, removed, removals(), "no persistent watch was set, so Close removed none: the caches ran on one-shot watches")
}
