package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

// freshTree reads the tree at root from outside the library: path ->
// node, nothing when the root does not exist.
func freshTree(t *testing.T, conn *zk.Conn, root string) map[string]seenNode {
	t.Helper()
	out := map[string]seenNode{}
	var walk func(p string)
	walk = func(p string) {
		n := fresh(t, conn, p)
		if !n.exists {
			return
		}
		out[p] = n
		for _, k := range zktest.Children(t, conn, p) {
			walk(p + "/" + k)
		}
	}
	walk(root)
	return out
}

func cachedTree(c *zr.TreeCache) map[string]seenNode {
	out := map[string]seenNode{}
	for p, n := range c.Snapshot() {
		out[p] = seenNode{exists: true, data: string(n.Data), czxid: n.Stat.Czxid, mzxid: n.Stat.Mzxid}
	}
	return out
}

// treeReplay applies a TreeCache's events, as a reader would, to an empty
// tree, and notes every event that does not follow from the tree before.
type treeReplay struct {
	mu     sync.Mutex
	tree   map[string]seenNode
	inited bool
	conn   map[zr.CacheEventKind]int
	nodes  []zr.CacheEvent // node events after CacheInitialized
	bad    []string
}

func (r *treeReplay) consume(root string, events <-chan zr.CacheEvent) {
	for ev := range events {
		r.mu.Lock()
		r.apply(root, ev)
		r.mu.Unlock()
	}
}

func (r *treeReplay) apply(root string, ev zr.CacheEvent) {
	if ev.Node == nil {
		if ev.Kind == zr.CacheInitialized {
			r.inited = true
		} else {
			r.conn[ev.Kind]++
		}
		return
	}
	p, st := ev.Node.Path, ev.Node.Stat
	prev, had := r.tree[p]
	badf := func(why string) {
		r.bad = append(r.bad, fmt.Sprintf("%v %s %+v: %s (before: %+v)", ev.Kind, p, st, why, prev))
	}
	switch ev.Kind {
	case zr.NodeCreated:
		if had {
			badf("exists already")
		}
		if _, ok := r.tree[parentOf(p)]; p != root && !ok {
			badf("its parent is not there")
		}
		r.tree[p] = seenNode{exists: true, data: string(ev.Node.Data), czxid: st.Czxid, mzxid: st.Mzxid}
	case zr.NodeChanged:
		if !had || prev.czxid != st.Czxid || st.Mzxid <= prev.mzxid {
			badf("not a newer state of the node")
		}
		r.tree[p] = seenNode{exists: true, data: string(ev.Node.Data), czxid: st.Czxid, mzxid: st.Mzxid}
	case zr.NodeDeleted:
		if !had || prev.czxid != st.Czxid {
			badf("not the node there")
		}
		for k := range r.tree {
			if parentOf(k) == p {
				badf("a child is still there")
			}
		}
		delete(r.tree, p)
	}
	if r.inited {
		r.nodes = append(r.nodes, ev)
	}
}

// treeWriter writes a small nested tree at random: creates, updates,
// deletes, three levels deep, from its own connection.
type treeWriter struct {
	t    *testing.T
	conn *zk.Conn
	root string
	r    *rand.Rand
	all  []string
}

func newTreeWriter(t *testing.T, conn *zk.Conn, root string, seed uint64) *treeWriter {
	w := &treeWriter{t: t, conn: conn, root: root, r: rand.New(rand.NewPCG(seed, 3)), all: []string{root}}
	for _, a := range []string{"a", "b", "c"} {
		w.all = append(w.all, root+"/"+a)
		for _, b := range []string{"x", "y", "z"} {
			w.all = append(w.all, root+"/"+a+"/"+b)
			for _, c := range []string{"1", "2"} {
				w.all = append(w.all, root+"/"+a+"/"+b+"/"+c)
			}
		}
	}
	return w
}

// retry runs op until it does not fail with a lost connection (the
// writer's own connection suffers the server restarts too).
func (w *treeWriter) retry(op func() error) error {
	for {
		err := op()
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *treeWriter) write(n int) {
	acl := zk.WorldACL(zk.PermAll)
	for range n {
		p := w.all[w.r.IntN(len(w.all))]
		data := []byte(fmt.Sprintf("%c%d", 'a'+w.r.IntN(26), w.r.IntN(100)))
		err := w.retry(func() error {
			ok, _, err := w.conn.Exists(p)
			switch {
			case err != nil:
				return err
			case !ok:
				_, err = w.conn.Create(p, data, 0, acl)
			case w.r.IntN(3) == 0:
				err = w.conn.Delete(p, -1)
			default:
				_, err = w.conn.Set(p, data, -1)
			}
			return err
		})
		if !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(w.t, err)
		}
	}
}

// deleteTree deletes p and everything below it.
func (w *treeWriter) deleteTree(p string) {
	for _, k := range zktest.Children(w.t, w.conn, p) {
		w.deleteTree(p + "/" + k)
	}
	if err := w.conn.Delete(p, -1); err != zk.ErrNoNode {
		require.NoError(w.t, err)
	}
}

// A TreeCache under a random writer and every fault the harness has: after
// each, the cache equals a fresh listing of the tree; the events replayed
// from an empty tree give it too, each one following from the tree before
// it; a subtree deleted and re-created while the cache is cut off is
// reported as deleted, then created with new czxids.
func TestTreeCache_EqualsAFreshListingAfterEveryFault(t *testing.T) {
	server(t) // the suite's backend must be available
	c := zktest.Start(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(4*time.Second))
	conn := raw(t, c)
	root := testPath(t)
	_ = zktest.Children(t, conn, "/") // connected
	if _, err := conn.Create("/t", nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	w := newTreeWriter(t, conn, root, seed)
	w.write(60) // a tree before the cache starts

	cache := zr.NewTreeCache(cl.Session, root)
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
	r := &treeReplay{tree: map[string]seenNode{}, conn: map[zr.CacheEventKind]int{}}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		r.consume(root, cache.Events())
	}()

	converged := func(what string) {
		t.Helper()
		var want, got map[string]seenNode
		ok := assert.Eventually(t, func() bool {
			want, got = freshTree(t, conn, root), cachedTree(cache)
			return fmt.Sprint(want) == fmt.Sprint(got)
		}, 20*time.Second, 5*time.Millisecond, "after %s the cache must equal a fresh listing", what)
		if !ok {
			require.Equal(t, want, got, "after %s", what)
		}
	}
	faults := []struct {
		name string
		run  func()
	}{
		{"no fault", func() { w.write(40) }},
		{"a blackhole", func() { proxy.Blackhole(); w.write(30); proxy.Heal() }},
		{"reset connections", func() { proxy.ResetAll(); w.write(30) }},
		{"lost replies", func() { done := proxy.LoseReplies(300 * time.Millisecond); w.write(30); <-done }},
		{"a session expiry", func() { cl.expire(t); w.write(30) }},
		{"a server restart", func() {
			if c.Backend() == zktest.BackendServers {
				t.Log("ZK_SERVERS cannot restart a server: fault skipped")
				return
			}
			require.NoError(t, c.Kill(0))
			require.NoError(t, c.Restart(0))
			w.write(30)
		}},
	}
	r0 := rand.New(rand.NewPCG(seed, 4))
	for round := range 2 {
		for _, i := range r0.Perm(len(faults)) {
			faults[i].run()
			converged(fmt.Sprintf("round %d: %s", round, faults[i].name))
		}
	}

	// A subtree deleted and created again while the cache is cut off.
	sub := root + "/a"
	for _, p := range []string{root, sub, sub + "/x"} {
		if _, err := conn.Create(p, []byte("before"), 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
			require.NoError(t, err)
		}
	}
	converged("a subtree created")
	old := cachedTree(cache)[sub]
	proxy.Blackhole()
	w.deleteTree(sub)
	for _, p := range []string{sub, sub + "/x"} {
		_, err := conn.Create(p, []byte("after"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	proxy.ResetAll()
	proxy.Heal()
	converged("a subtree deleted and created again while cut off")
	require.NotEqual(t, old.czxid, cachedTree(cache)[sub].czxid)

	require.NoError(t, cache.Close(context.Background()))
	<-consumed
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Empty(t, r.bad, "every event follows from the tree before it")
	assert.Equal(t, freshTree(t, conn, root), r.tree, "the events replayed from an empty tree give the final tree")
	assert.Positive(t, r.conn[zr.CacheLost], "the session expiry reaches the reader: %v", r.conn)
	assert.Positive(t, r.conn[zr.CacheReconnected], "%v", r.conn)
	var kinds []string
	for _, ev := range r.nodes {
		if ev.Node.Path == sub {
			kinds = append(kinds, fmt.Sprintf("%v@%d", ev.Kind, ev.Node.Stat.Czxid))
		}
	}
	require.GreaterOrEqual(t, len(kinds), 2)
	assert.Equal(t, []string{fmt.Sprintf("NODE_DELETED@%d", old.czxid), fmt.Sprintf("NODE_CREATED@%d", cachedTree(cache)[sub].czxid)},
		kinds[len(kinds)-2:], "the re-created node: deleted, then created with its new czxid")
	assert.NoError(t, cache.Err())
	w.deleteTree(root)
}

// A reader that takes no events while the tree changes a lot holds the
// cache back in nothing: the copy follows the server, and the events,
// read afterwards, are fewer than the changes and end in the same tree.
func TestTreeCache_SlowReaderGetsCoalescedEventsEndingInTheLastTree(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	root := testPath(t)
	if _, err := conn.Create("/t", nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	_, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	cache := zr.NewTreeCache(cl.Session, root)
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
	changes := 0
	for i := range 20 {
		p := fmt.Sprintf("%s/n%d", root, i%5)
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
			changes++
		}
		for j := range 10 {
			_, err := conn.Set(p, []byte{byte(i), byte(j)}, -1)
			require.NoError(t, err)
			changes++
		}
	}
	require.Eventually(t, func() bool { return fmt.Sprint(freshTree(t, conn, root)) == fmt.Sprint(cachedTree(cache)) },
		10*time.Second, time.Millisecond, "the copy follows while nobody reads the events")
	r := &treeReplay{tree: map[string]seenNode{}, conn: map[zr.CacheEventKind]int{}}
	n := 0
	for !(r.inited && fmt.Sprint(r.tree) == fmt.Sprint(cachedTree(cache))) {
		select {
		case ev := <-cache.Events():
			r.apply(root, ev)
			n++
		case <-time.After(10 * time.Second):
			t.Fatalf("the events never reach the cached tree: %v", r.tree)
		}
	}
	assert.Empty(t, r.bad)
	assert.Less(t, n, changes, "changes made while the reader was away are coalesced")
	w := &treeWriter{t: t, conn: conn}
	w.deleteTree(root)
}

func TestTreeCache_CloseLeavesNoGoroutine(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	root := testPath(t)
	if _, err := conn.Create("/t", nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	for _, p := range []string{root, root + "/a", root + "/a/b"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
			require.NoError(t, err)
		}
	}
	ignore := goleak.IgnoreCurrent()
	cache := zr.NewTreeCache(cl.Session, root)
	require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
	require.NoError(t, cache.Close(context.Background()))
	for range cache.Events() { // closed by Close
	}
	// The Session keeps idle request workers for its next requests.
	goleak.VerifyNone(t, ignore, goleak.IgnoreTopFunction("github.com/zkrecipes/zkrecipes.(*Session).work"))
	kids := zktest.Children(t, conn, root)
	slices.Sort(kids)
	assert.Equal(t, "a", strings.Join(kids, ","), "the cache writes nothing")
	w := &treeWriter{t: t, conn: conn}
	w.deleteTree(root)
}

// A Curator client writes a tree (creating parents as containers, deleting
// subtrees recursively); the Go TreeCache ends on what the server holds.
func TestInterop_CuratorWritesATreeTheGoTreeCacheFollows(t *testing.T) {
	c := server(t)
	peers.Require(t, peers.Curator)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	root := testPath(t)
	cache := zr.NewTreeCache(cl.Session, root)
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
	r := &treeReplay{tree: map[string]seenNode{}, conn: map[zr.CacheEventKind]int{}}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		r.consume(root, cache.Events())
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := peers.BuildJava(ctx)
	require.NoError(t, err)
	seed := rand.Int64N(1 << 40)
	t.Logf("seed %d", seed)
	cmd := exec.CommandContext(ctx, "java", "-XX:+UseSerialGC", "-Xmx256m", "-cp", cp, "zkrecipes.peers.CuratorTreePeer",
		"write", strings.Join(c.Servers(), ","), root, strconv.FormatInt(seed, 10), "300")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "curator peer: %s", out)
	require.Contains(t, string(out), "done 300")

	want := freshTree(t, conn, root)
	require.NotEmpty(t, want)
	require.Eventually(t, func() bool { return fmt.Sprint(want) == fmt.Sprint(cachedTree(cache)) }, 20*time.Second, 5*time.Millisecond,
		"the cache ends on the tree Curator left")
	var curatorData int
	for _, n := range want {
		if strings.HasPrefix(n.data, "curator-") {
			curatorData++
		}
	}
	assert.Positive(t, curatorData, "Curator's data is there")
	require.NoError(t, cache.Close(ctx))
	<-consumed
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Empty(t, r.bad)
	assert.Equal(t, want, r.tree, "the events replay to the same tree")
	(&treeWriter{t: t, conn: conn}).deleteTree(root)
}

// On a three-server ensemble, the leader killed while a writer goes on
// (the cache's server may be the one killed: it then moves to another),
// then started again: the cache ends equal to a fresh listing each time.
// It starts an ensemble of its own (3 to 20 s, the more on a loaded 2-core
// machine); -short skips it.
func TestTreeCache_ConvergesAcrossALeaderKillOnAnEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a 3-server ensemble")
	}
	server(t) // the suite's backend must be available
	ens := zktest.Start(t, zktest.WithSize(3))
	if ens.Backend() == zktest.BackendServers {
		t.Skip("ZK_SERVERS cannot kill a server; the java and docker backends run this")
	}
	ctx := ctxT(t, 2*time.Minute)
	leader, err := ens.WaitLeader(ctx)
	require.NoError(t, err)
	cl := connect(t, ens, nil, zr.WithSessionTimeout(8*time.Second))
	conn := raw(t, ens)
	root := testPath(t)
	if _, err := conn.Create("/t", nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	w := newTreeWriter(t, conn, root, seed)
	w.write(40)
	cache := zr.NewTreeCache(cl.Session, root)
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctx))
	converged := func(what string) {
		t.Helper()
		var want, got map[string]seenNode
		if !assert.Eventually(t, func() bool {
			want, got = freshTree(t, conn, root), cachedTree(cache)
			return fmt.Sprint(want) == fmt.Sprint(got)
		}, 30*time.Second, 10*time.Millisecond, "after %s the cache must equal a fresh listing", what) {
			require.Equal(t, want, got, "after %s", what)
		}
	}
	converged("the load")
	require.NoError(t, ens.Kill(leader))
	w.write(40)
	converged("a leader kill")
	require.NoError(t, ens.Restart(leader))
	w.write(40)
	converged("the old leader's restart")
	require.NoError(t, cache.Close(ctx))
	assert.NoError(t, cache.Err())
}

// sendLog records when each request a Session's recipes made was sent.
type sendLog struct {
	mu   sync.Mutex
	sent []sentOp
}

type sentOp struct {
	op, path string
	at       time.Time
}

func (l *sendLog) TraceOp(ev zr.TraceEvent) {
	at := time.Now().Add(-ev.Latency)
	l.mu.Lock()
	l.sent = append(l.sent, sentOp{ev.Op, ev.Path, at})
	l.mu.Unlock()
}

// after returns the requests on paths under root sent after t.
func (l *sendLog) after(root string, t time.Time) []sentOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sentOp
	for _, s := range l.sent {
		if strings.HasPrefix(s.path, root+"/") && s.at.After(t) {
			out = append(out, s)
		}
	}
	return out
}

// A TreeCache closed while its load waits on a connection that is cut off
// sends nothing more once Close has returned, when the connection comes
// back: Close ends the cache, and the replies that arrive after it start
// no further read (each node's listing followed its read before, setting
// a children watch after Close).
func TestTreeCache_SendsNoReadAfterCloseReturnsWhileCutOff(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	root := testPath(t)
	mkdirs(t, conn, root)
	for i := range 300 {
		if _, err := conn.Create(fmt.Sprintf("%s/n%03d", root, i), nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
			require.NoError(t, err)
		}
	}
	t.Cleanup(func() { (&treeWriter{t: t, conn: conn}).deleteTree(root) })
	proxy := zktest.NewProxy(t, c.Servers()[0])
	log := &sendLog{}
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(8*time.Second), zr.WithTracer(log))

	for round := range 3 {
		name := fmt.Sprintf("round %d", round)
		proxy.SetDelay(time.Duration(20+20*round) * time.Millisecond) // a load that takes a while
		cache := zr.NewTreeCache(cl.Session, root)
		started := make(chan error, 1)
		begin := time.Now()
		go func() { started <- cache.Start(ctxT(t, 30*time.Second)) }()
		require.Eventually(t, func() bool { return len(log.after(root, begin)) > 10 }, 10*time.Second, time.Millisecond,
			"%s: the load reads the children", name)
		proxy.Blackhole()
		require.NoError(t, cache.Close(context.Background()))
		closed := time.Now()
		require.Error(t, <-started, "%s: closed before it was loaded", name)
		proxy.SetDelay(0)
		proxy.Heal()
		require.Never(t, func() bool { return len(log.after(root, closed)) > 0 }, time.Second, 5*time.Millisecond,
			"%s: requests sent after Close returned: %v", name, lazy(func() string { return fmt.Sprint(log.after(root, closed)) }))
		_, _, err := cl.Conn().Exists(root) // the connection is back
		require.NoError(t, err, name)
	}
}
