package recipes_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

// seenNode is one node state a watcher or cache reported.
type seenNode struct {
	exists bool
	data   string
	czxid  int64
	mzxid  int64
}

// history collects the node states a watcher reports, in order.
type history struct {
	mu    sync.Mutex
	nodes []seenNode
}

func (h *history) add(n seenNode) {
	h.mu.Lock()
	h.nodes = append(h.nodes, n)
	h.mu.Unlock()
}

func (h *history) last() (seenNode, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.nodes) == 0 {
		return seenNode{}, false
	}
	return h.nodes[len(h.nodes)-1], true
}

func (h *history) all() []seenNode {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]seenNode(nil), h.nodes...)
}

// fresh reads path from outside the library.
func fresh(t *testing.T, conn *zk.Conn, path string) seenNode {
	t.Helper()
	data, st, err := conn.Get(path)
	if err == zk.ErrNoNode {
		return seenNode{}
	}
	require.NoError(t, err)
	return seenNode{exists: true, data: string(data), czxid: st.Czxid, mzxid: st.Mzxid}
}

// faultyWriter writes path at random (creates, updates, deletes) from a
// direct connection while the watching client, behind proxy, suffers a
// fault each round: a blackhole, reset connections, lost replies, a
// session expiry, a delete and re-create while it is cut off. After each
// round what the watcher last reported must equal a fresh read.
func faultyWriter(t *testing.T, c *zktest.Cluster, proxy *zktest.Proxy, cl *client, path string, last func() (seenNode, bool)) (recreated [2]int64) {
	t.Helper()
	w := raw(t, c)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	if _, err := w.Create(parentOf(path), nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	write := func(n int) {
		for range n {
			switch cur := fresh(t, w, path); {
			case !cur.exists:
				_, err := w.Create(path, []byte{byte('a' + r.IntN(26))}, 0, zk.WorldACL(zk.PermAll))
				require.NoError(t, err)
			case r.IntN(4) == 0:
				require.NoError(t, w.Delete(path, -1))
			default:
				_, err := w.Set(path, []byte{byte('a' + r.IntN(26))}, -1)
				require.NoError(t, err)
			}
		}
	}
	converged := func(what string) {
		t.Helper()
		require.Eventually(t, func() bool {
			got, ok := last()
			return ok && got == fresh(t, w, path)
		}, 15*time.Second, 5*time.Millisecond, "after %s the watcher must equal a fresh read", what)
	}
	faults := []struct {
		name string
		run  func()
	}{
		{"no fault", func() { write(20) }},
		{"a blackhole", func() { proxy.Blackhole(); write(10); proxy.Heal() }},
		{"reset connections", func() { proxy.ResetAll(); write(10) }},
		{"lost replies", func() { done := proxy.LoseReplies(300 * time.Millisecond); write(10); <-done }},
		{"a session expiry", func() { cl.expire(t); write(10) }},
	}
	for _, i := range r.Perm(len(faults)) {
		faults[i].run()
		converged(faults[i].name)
	}
	// A delete and re-create while the watcher is cut off.
	if !fresh(t, w, path).exists {
		write(1)
	}
	converged("a create")
	recreated[0] = fresh(t, w, path).czxid
	proxy.Blackhole()
	require.NoError(t, w.Delete(path, -1))
	_, err := w.Create(path, []byte("again"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	proxy.ResetAll()
	proxy.Heal()
	recreated[1] = fresh(t, w, path).czxid
	converged("a delete and re-create while cut off")
	return recreated
}

func parentOf(p string) string { return p[:strings.LastIndexByte(p, '/')] }

// checkOrder checks that the states seen of one node never go back: each
// one that exists has a larger mzxid than any seen before it.
func checkOrder(t *testing.T, seen []seenNode) {
	t.Helper()
	var mz int64
	for i, n := range seen {
		if n.exists {
			require.Greater(t, n.mzxid, mz, "state %d of %d goes back in mzxid order", i, len(seen))
			mz = n.mzxid
		}
	}
}

func TestWatchData_ConvergesUnderFaultsAndReportsARecreatedNode(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(4*time.Second))
	path := testPath(t)
	var h history
	ctx, cancel := context.WithCancel(ctxT(t, 60*time.Second))
	done := make(chan error, 1)
	go func() {
		done <- zr.WatchData(ctx, cl.Session, path, func(data []byte, st *zr.NodeStat) error {
			if st == nil {
				h.add(seenNode{})
			} else {
				h.add(seenNode{exists: true, data: string(data), czxid: st.Czxid, mzxid: st.Mzxid})
			}
			return nil
		})
	}()
	defer func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	}()
	require.Eventually(t, func() bool { _, ok := h.last(); return ok }, 10*time.Second, time.Millisecond)

	re := faultyWriter(t, c, proxy, cl, path, h.last)
	seen := h.all()
	checkOrder(t, seen)
	require.NotEqual(t, re[0], re[1])
	got, _ := h.last()
	assert.Equal(t, re[1], got.czxid, "the re-created node is reported with its new czxid")
	_ = raw(t, c).Delete(path, -1)
}

// replay applies a NodeCache's events, as a reader would, to the node
// state they start from.
type replay struct {
	history
	conn map[zr.CacheEventKind]int
	bad  []string // events that do not follow from the state before
}

func (r *replay) consume(events <-chan zr.CacheEvent) {
	for ev := range events {
		prev, _ := r.last()
		switch {
		case ev.Kind == zr.NodeCreated && prev.exists,
			ev.Kind == zr.NodeDeleted && (!prev.exists || prev.czxid != ev.Node.Stat.Czxid),
			ev.Kind == zr.NodeChanged && (!prev.exists || prev.czxid != ev.Node.Stat.Czxid):
			r.mu.Lock()
			r.bad = append(r.bad, fmt.Sprintf("%v %+v after %+v", ev.Kind, ev.Node.Stat, prev))
			r.mu.Unlock()
		}
		switch ev.Kind {
		case zr.CacheInitialized, zr.NodeCreated, zr.NodeChanged:
			if ev.Node == nil {
				r.add(seenNode{})
			} else {
				r.add(seenNode{exists: true, data: string(ev.Node.Data), czxid: ev.Node.Stat.Czxid, mzxid: ev.Node.Stat.Mzxid})
			}
		case zr.NodeDeleted:
			r.add(seenNode{})
		default:
			r.mu.Lock()
			r.conn[ev.Kind]++
			r.mu.Unlock()
		}
	}
}

func TestNodeCache_EventsReplayToAFreshReadUnderFaults(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(4*time.Second))
	path := testPath(t)
	cache := zr.NewNodeCache(cl.Session, path)
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
	r := &replay{conn: map[zr.CacheEventKind]int{}}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		r.consume(cache.Events())
	}()

	re := faultyWriter(t, c, proxy, cl, path, r.last)
	checkOrder(t, r.all())
	got, _ := r.last()
	assert.Equal(t, re[1], got.czxid, "the re-created node is reported with its new czxid")
	n, ok := cache.Get()
	require.True(t, ok)
	assert.Equal(t, fresh(t, raw(t, c), path), seenNode{exists: true, data: string(n.Data), czxid: n.Stat.Czxid, mzxid: n.Stat.Mzxid}, "Get equals a fresh read")
	require.NoError(t, cache.Close(context.Background()))
	<-consumed
	r.mu.Lock()
	assert.Positive(t, r.conn[zr.CacheLost], "the session expiry reaches the reader: %v", r.conn)
	assert.Positive(t, r.conn[zr.CacheReconnected], "%v", r.conn)
	assert.Empty(t, r.bad, "every event follows from the state before it (a new czxid comes as a deletion, then a creation)")
	r.mu.Unlock()
	assert.NoError(t, cache.Err())
	_ = raw(t, c).Delete(path, -1)
}

func TestNodeCache_CloseLeavesNoGoroutine(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	ignore := goleak.IgnoreCurrent()
	cache := zr.NewNodeCache(cl.Session, testPath(t))
	require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
	ev := <-cache.Events()
	require.Equal(t, zr.CacheInitialized, ev.Kind)
	require.NoError(t, cache.Close(context.Background()))
	select {
	case _, open := <-cache.Events():
		assert.False(t, open, "Close closes the events")
	case <-time.After(5 * time.Second):
		t.Error("Close did not close the events")
	}
	// The Session keeps idle request workers for its next requests, and a
	// connection that reconnected meanwhile (a busy machine) has new loops.
	goleak.VerifyNone(t, ignore, goleak.IgnoreTopFunction("github.com/zkrecipes/zkrecipes.(*Session).work"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).loop.func2"))
}

func TestWatchChildren_ConvergesUnderFaultsAndReportsARecreatedParent(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(4*time.Second))
	w := raw(t, c)
	path := testPath(t)
	if _, err := w.Create(parentOf(path), nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	type listing struct {
		kids  string
		czxid int64
		pzxid int64
	}
	var mu sync.Mutex
	var seen []listing
	last := func() (listing, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return listing{}, false
		}
		return seen[len(seen)-1], true
	}
	ctx, cancel := context.WithCancel(ctxT(t, 60*time.Second))
	done := make(chan error, 1)
	go func() {
		done <- zr.WatchChildren(ctx, cl.Session, path, func(kids []string, st *zr.NodeStat) error {
			l := listing{kids: strings.Join(kids, ",")}
			if st != nil {
				l.czxid, l.pzxid = st.Czxid, st.Pzxid
			}
			mu.Lock()
			seen = append(seen, l)
			mu.Unlock()
			return nil
		})
	}()
	defer func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	}()
	freshList := func() listing {
		kids, st, err := w.Children(path)
		if err == zk.ErrNoNode {
			return listing{}
		}
		require.NoError(t, err)
		slices.Sort(kids)
		return listing{kids: strings.Join(kids, ","), czxid: st.Czxid, pzxid: st.Pzxid}
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	write := func(n int) {
		for range n {
			if _, err := w.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
				require.NoError(t, err)
			}
			kid := path + "/" + string(rune('a'+r.IntN(6)))
			if err := w.Delete(kid, -1); err == zk.ErrNoNode {
				_, err = w.Create(kid, nil, 0, zk.WorldACL(zk.PermAll))
				require.NoError(t, err)
			}
		}
	}
	converged := func(what string) {
		t.Helper()
		require.Eventually(t, func() bool { got, ok := last(); return ok && got == freshList() }, 15*time.Second, 5*time.Millisecond,
			"after %s the listing must equal a fresh one", what)
	}
	write(10)
	converged("writes")
	proxy.Blackhole()
	write(10)
	proxy.Heal()
	converged("a blackhole")
	cl.expire(t)
	write(10)
	converged("a session expiry")
	// Delete and re-create the parent, with the same children, while cut off.
	before := freshList()
	proxy.Blackhole()
	kids, _, err := w.Children(path)
	require.NoError(t, err)
	for _, k := range kids {
		require.NoError(t, w.Delete(path+"/"+k, -1))
	}
	require.NoError(t, w.Delete(path, -1))
	_, err = w.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	for _, k := range kids {
		_, err = w.Create(path+"/"+k, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	proxy.ResetAll()
	proxy.Heal()
	converged("a re-created parent")
	got, _ := last()
	assert.NotEqual(t, before.czxid, got.czxid, "reported with its new czxid")
	mu.Lock()
	for i := 1; i < len(seen); i++ {
		a, b := seen[i-1], seen[i]
		if a.czxid != 0 && b.czxid != 0 {
			assert.True(t, b.czxid > a.czxid || (b.czxid == a.czxid && b.pzxid > a.pzxid), "listing %d goes back: %+v after %+v", i, b, a)
		}
	}
	mu.Unlock()
	for _, k := range kids {
		_ = w.Delete(path+"/"+k, -1)
	}
	_ = w.Delete(path, -1)
}
