package otelzk_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/otelzk"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// mkdirs creates each path that does not exist.
func mkdirs(t *testing.T, conn *zk.Conn, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			require.NoError(t, err)
		}
	}
}

// A NodeCache counts its first load, then a resync after the connection
// dropped and came back, on its persistent watch and on one-shot watches
// (a Session without the wire layer, which cannot set a persistent watch).
func TestNodeCacheLoadAndResyncAreCounted(t *testing.T) {
	for _, mode := range []string{"persistent", "one-shot"} {
		t.Run(mode, func(t *testing.T) {
			var opts []zr.SessionOption
			if mode == "one-shot" {
				opts = append(opts, zr.WithWireLayer(false))
			}
			c := server(t)
			proxy := zktest.NewProxy(t, c.Servers()[0])
			r := newRig(t, c, []string{proxy.Addr()}, opts...)
			conn := c.Observer(t)
			path := testPath(t)
			mkdirs(t, conn, "/otel", path)
			cache := zr.NewNodeCache(r.Session, path)
			defer func() { _ = cache.Close(context.Background()) }()
			require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
			go func() {
				for range cache.Events() {
				}
			}()
			kind := otelzk.AttrRecipeKind.String(zr.KindNodeCache)
			initial, resync := otelzk.AttrSyncKind.String("initial"), otelzk.AttrSyncKind.String("resync")
			require.EqualValues(t, 1, r.sum(t, "zookeeper.cache.syncs", kind, initial))
			require.EqualValues(t, 0, r.sum(t, "zookeeper.cache.syncs", kind, resync))
			require.EqualValues(t, 1, r.sum(t, "zookeeper.cache.nodes", kind))

			for i := int64(1); i <= 2; i++ { // every reconnection, not only the first
				proxy.ResetAll()
				require.Eventually(t, func() bool {
					return r.sum(t, "zookeeper.cache.syncs", kind, resync) >= i
				}, 20*time.Second, 10*time.Millisecond, "a resync after reconnection %d", i)
			}
			require.EqualValues(t, 1, r.sum(t, "zookeeper.cache.syncs", kind, initial))
			_, err := conn.Set(path, []byte("x"), -1)
			require.NoError(t, err)
			require.Eventually(t, func() bool { n, _ := cache.Get(); return string(n.Data) == "x" }, 10*time.Second, 5*time.Millisecond)
			require.LessOrEqual(t, r.sum(t, "zookeeper.cache.syncs", kind, resync), int64(4), "a change is no resync")

			// The mode it ran in: only a persistent watch is removed on Close.
			require.NoError(t, cache.Close(context.Background()))
			removed, _ := r.hist(t, "zookeeper.client.operation.duration", otelzk.AttrOperation.String("removeWatches"))
			if mode == "persistent" {
				require.NotZero(t, removed, "the cache ran on a persistent watch")
			} else {
				require.Zero(t, removed, "the cache ran on one-shot watches")
			}
		})
	}
}

// A cache whose reader lags reports its backlog as it grows, before any
// resync, and 0 once the reader has caught up.
func TestCacheBacklogIsReportedWhileTheReaderLags(t *testing.T) {
	c := server(t)
	r := newRig(t, c, nil)
	conn := c.Observer(t)
	root := testPath(t)
	mkdirs(t, conn, "/otel", root)
	cache := zr.NewTreeCache(r.Session, root, zr.WithName("config"))
	defer func() { _ = cache.Close(context.Background()) }()
	require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
	name := otelzk.AttrRecipeName.String("config")
	const n = 100
	for i := range n {
		mkdirs(t, conn, fmt.Sprintf("%s/n%03d", root, i))
	}
	require.Eventually(t, func() bool { return cache.Len() == n+1 }, 20*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, r.sum(t, "zookeeper.cache.backlog", name), int64(64), "the backlog of a reader that reads nothing")
	require.EqualValues(t, 1, r.sum(t, "zookeeper.cache.syncs", name), "the initial load alone")

	got := 0
	for got < n+1 { // CacheInitialized and the creations
		select {
		case <-cache.Events():
			got++
		case <-time.After(10 * time.Second):
			t.Fatalf("%d events delivered", got)
		}
	}
	require.Eventually(t, func() bool { return r.sum(t, "zookeeper.cache.backlog", name) == 0 }, 10*time.Second, 5*time.Millisecond,
		"0 once the reader caught up")
}

// A discovery ServiceCache and a GroupMember's view report their loads as
// their own kinds.
func TestServiceCacheAndGroupViewReportTheirKind(t *testing.T) {
	r := newRig(t, server(t), nil)
	d := discovery.New(r.Session, testPath(t)+"/svc")
	defer func() { _ = d.Close(context.Background()) }()
	require.NoError(t, d.Register(ctxT(t, 10*time.Second), discovery.Instance{Name: "greeter", ID: "g0", Address: "127.0.0.1", Port: 8000}))
	sc := d.NewCache("greeter")
	defer func() { _ = sc.Close(context.Background()) }()
	require.NoError(t, sc.Start(ctxT(t, 10*time.Second)))
	initial := otelzk.AttrSyncKind.String("initial")
	require.Eventually(t, func() bool {
		return r.sum(t, "zookeeper.cache.syncs", otelzk.AttrRecipeKind.String(zr.KindDiscovery), initial) == 1
	}, 10*time.Second, 5*time.Millisecond)

	g := zr.NewGroupMember(r.Session, testPath(t)+"/group", "m1", nil)
	require.NoError(t, g.Start(ctxT(t, 10*time.Second)))
	defer func() { _ = g.Close(context.Background()) }()
	require.Eventually(t, func() bool {
		return r.sum(t, "zookeeper.cache.syncs", otelzk.AttrRecipeKind.String(zr.KindGroupMember), initial) == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 0, r.sum(t, "zookeeper.cache.syncs", otelzk.AttrRecipeKind.String(zr.KindTreeCache)))
}

// A TreeCache counts its first load and a resync after every reconnection,
// on its persistent watch and on one-shot watches.
func TestTreeCacheLoadAndEveryResyncAreCountedInBothModes(t *testing.T) {
	for _, mode := range []string{"persistent", "one-shot"} {
		t.Run(mode, func(t *testing.T) {
			var opts []zr.SessionOption
			if mode == "one-shot" {
				opts = append(opts, zr.WithWireLayer(false))
			}
			c := server(t)
			proxy := zktest.NewProxy(t, c.Servers()[0])
			r := newRig(t, c, []string{proxy.Addr()}, opts...)
			root := testPath(t)
			mkdirs(t, c.Observer(t), "/otel", root, root+"/a")
			cache := zr.NewTreeCache(r.Session, root)
			defer func() { _ = cache.Close(context.Background()) }()
			require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
			go func() {
				for range cache.Events() {
				}
			}()
			kind := otelzk.AttrRecipeKind.String(zr.KindTreeCache)
			initial, resync := otelzk.AttrSyncKind.String("initial"), otelzk.AttrSyncKind.String("resync")
			require.EqualValues(t, 1, r.sum(t, "zookeeper.cache.syncs", kind, initial))
			for i := int64(1); i <= 2; i++ {
				proxy.ResetAll()
				require.Eventually(t, func() bool {
					return r.sum(t, "zookeeper.cache.syncs", kind, resync) >= i
				}, 20*time.Second, 10*time.Millisecond, "a resync after reconnection %d", i)
			}
			require.EqualValues(t, 1, r.sum(t, "zookeeper.cache.syncs", kind, initial))
			require.EqualValues(t, 2, r.sum(t, "zookeeper.cache.nodes", kind))
			require.NoError(t, cache.Close(context.Background()))
			removed, _ := r.hist(t, "zookeeper.client.operation.duration", otelzk.AttrOperation.String("removeWatches"))
			if mode == "persistent" {
				require.NotZero(t, removed, "the cache ran on a persistent watch")
			} else {
				require.Zero(t, removed, "the cache ran on one-shot watches")
			}
		})
	}
}
