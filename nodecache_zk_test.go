package zkrecipes

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nextEvent returns the cache's next event, failing the test if none
// comes within 10 seconds.
func nextEvent(t *testing.T, c *NodeCache) CacheEvent {
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

func TestZKNodeCacheReportsCreationChangeAndDeletionAfterTheInitialState(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/nodecache-" + newUUID()
	c := NewNodeCache(s, path)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))
	_, ok := c.Get()
	assert.False(t, ok, "the node does not exist yet")
	ev := nextEvent(t, c)
	assert.Equal(t, CacheInitialized, ev.Kind)
	assert.Nil(t, ev.Node)

	_, err := raw.Create(path, []byte("one"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	ev = nextEvent(t, c)
	require.Equal(t, NodeCreated, ev.Kind)
	assert.Equal(t, "one", string(ev.Node.Data))
	assert.Equal(t, path, ev.Node.Path)
	created := ev.Node.Stat

	st, err := raw.Set(path, []byte("two"), -1)
	require.NoError(t, err)
	ev = nextEvent(t, c)
	require.Equal(t, NodeChanged, ev.Kind)
	assert.Equal(t, "two", string(ev.Node.Data))
	assert.Equal(t, st.Mzxid, ev.Node.Stat.Mzxid)
	assert.Equal(t, int32(1), ev.Node.Stat.Version)
	assert.Equal(t, created.Czxid, ev.Node.Stat.Czxid)
	got, ok := c.Get()
	require.True(t, ok)
	assert.Equal(t, "two", string(got.Data))

	require.NoError(t, raw.Delete(path, -1))
	ev = nextEvent(t, c)
	require.Equal(t, NodeDeleted, ev.Kind)
	assert.Equal(t, "two", string(ev.Node.Data), "a deletion carries the node as last seen")
	_, ok = c.Get()
	assert.False(t, ok)

	require.NoError(t, c.Close(ctx))
	for range c.Events() { // closed by Close
	}
	assert.NoError(t, c.Err())
}

// A reader that does not keep up never blocks the cache: Get follows the
// node, and the events, once read, step through coalesced states in mzxid
// order to the last one.
func TestZKNodeCacheSlowReaderSeesCoalescedChangesEndingInTheLastValue(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/nodecache-" + newUUID()
	_, err := raw.Create(path, []byte("0"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	c := NewNodeCache(s, path)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))

	var st *zk.Stat
	for i := 1; i <= 100; i++ {
		st, err = raw.Set(path, []byte{byte(i)}, -1)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { n, ok := c.Get(); return ok && n.Stat.Mzxid == st.Mzxid }, 10*time.Second, time.Millisecond,
		"Get follows the node while nobody reads the events")

	ev := nextEvent(t, c)
	require.Equal(t, CacheInitialized, ev.Kind)
	mz := ev.Node.Stat.Mzxid
	n := 0
	for mz != st.Mzxid {
		ev = nextEvent(t, c)
		require.Equal(t, NodeChanged, ev.Kind)
		require.Greater(t, ev.Node.Stat.Mzxid, mz)
		mz = ev.Node.Stat.Mzxid
		n++
	}
	assert.Equal(t, []byte{100}, ev.Node.Data)
	assert.Less(t, n, 100, "changes made while the reader was away are coalesced")
}

func TestZKNodeCacheStopsWithErrClosedWhenTheSessionCloses(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	c := NewNodeCache(s, "/zkt/nodecache-"+newUUID())
	require.NoError(t, c.Start(ctx))
	require.NoError(t, s.Close())
	for range c.Events() { // closed when the cache stops
	}
	assert.ErrorIs(t, c.Err(), ErrClosed)
	require.NoError(t, c.Close(ctx))
	assert.ErrorIs(t, NewNodeCache(s, "/x").Start(ctx), ErrClosed)
}

// On its persistent watch, a NodeCache sets no watch with a read: one
// getData to load, one per change (creation, data change, deletion), and
// none for a change to the node's children.
func TestZKNodeCacheOnAPersistentWatchReadsOncePerChangeAndSetsNoWatch(t *testing.T) {
	raw := zkRaw(t)
	path := "/zkt/nodecache-" + newUUID()
	acl := zk.WorldACL(zk.PermAll)
	_, _ = raw.Create("/zkt", nil, 0, acl)
	var watching, plain atomic.Int32
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &watchCountingConn{Conn: c, prefix: path, watching: &watching, plain: &plain}, nil
	}
	log := &treeOps{}
	ctx, s := zkSession(t, 30*time.Second, WithTracer(log), WithDialer(dial))
	c := NewNodeCache(s, path)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.Start(ctx))
	require.Equal(t, CacheInitialized, nextEvent(t, c).Kind)
	assert.Equal(t, []string{"addWatch " + path, "getData " + path}, log.take(), "the watch, then the load")

	_, err := raw.Create(path, []byte("one"), 0, acl)
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Delete(path+"/kid", -1); _ = raw.Delete(path, -1) })
	require.Equal(t, NodeCreated, nextEvent(t, c).Kind)
	_, err = raw.Create(path+"/kid", nil, 0, acl) // no read: the node's data is as it was
	require.NoError(t, err)
	_, err = raw.Set(path, []byte("two"), -1)
	require.NoError(t, err)
	require.Equal(t, NodeChanged, nextEvent(t, c).Kind)
	require.NoError(t, raw.Delete(path+"/kid", -1))
	require.NoError(t, raw.Delete(path, -1))
	require.Equal(t, NodeDeleted, nextEvent(t, c).Kind)
	assert.Equal(t, []string{"getData " + path, "getData " + path, "getData " + path}, log.take(), "one read per change")
	assert.Zero(t, watching.Load(), "no read sets a watch")
}
