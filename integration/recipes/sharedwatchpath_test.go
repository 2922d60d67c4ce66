package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The watchers a Session may hold on one path: TreeCache, NodeCache,
// PersistentWatch (plain and recursive), and the one-shot helpers
// WatchData and WatchChildren. ZooKeeper 3.6 to 3.8 keep one watch mode
// per connection and path (ZOOKEEPER-4466) and cannot remove a persistent
// watch alone (ZOOKEEPER-4472); 3.9 can. Whatever the mix, each watcher
// must follow every change.
var sharedPathKinds = []string{"TreeCache", "NodeCache", "PersistentWatch", "RecursiveWatch", "WatchData", "WatchChildren"}

// sharedPathWatcher is one watcher of the mix, as the test sees it.
type sharedPathWatcher struct {
	kind    string
	current func(i int) (bool, string) // reflects bump i? and what it holds
	close   func() error
}

// bumpSharedPath makes change i at p: p's data, p/kid's data, and a new
// child p/c<i>; every kind of watcher sees one of them.
func bumpSharedPath(conn *zk.Conn, p string, i int) error {
	v := []byte(strconv.Itoa(i))
	if _, err := conn.Set(p, v, -1); err != nil {
		return err
	}
	if _, err := conn.Set(p+"/kid", v, -1); err != nil {
		return err
	}
	_, err := conn.Create(fmt.Sprintf("%s/c%d", p, i), nil, 0, zk.WorldACL(zk.PermAll))
	return err
}

// startSharedPath starts a watcher of kind at p on s.
func startSharedPath(t *testing.T, s *zr.Session, p, kind string) *sharedPathWatcher {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	want := func(i int) string { return strconv.Itoa(i) }
	switch kind {
	case "TreeCache":
		c := zr.NewTreeCache(s, p)
		require.NoError(t, c.Start(ctx))
		return &sharedPathWatcher{kind: kind, close: func() error { return c.Close(context.Background()) }, current: func(i int) (bool, string) {
			n, _ := c.Get(p)
			k, _ := c.Get(p + "/kid")
			_, ok := c.Get(fmt.Sprintf("%s/c%d", p, i))
			return string(n.Data) == want(i) && string(k.Data) == want(i) && ok,
				fmt.Sprintf("%s=%q kid=%q c%d:%v", p, n.Data, k.Data, i, ok)
		}}
	case "NodeCache":
		c := zr.NewNodeCache(s, p)
		require.NoError(t, c.Start(ctx))
		return &sharedPathWatcher{kind: kind, close: func() error { return c.Close(context.Background()) }, current: func(i int) (bool, string) {
			n, _ := c.Get()
			return string(n.Data) == want(i), fmt.Sprintf("%q", n.Data)
		}}
	case "PersistentWatch", "RecursiveWatch":
		rec := kind == "RecursiveWatch"
		w := zr.NewPersistentWatch(s, p, zr.WithRecursive(rec))
		require.NoError(t, w.Start(ctx))
		m := &mirror{s: s, p: p, rec: rec, kids: map[string]bool{}}
		done := make(chan struct{})
		go func() { defer close(done); m.follow(w) }()
		return &sharedPathWatcher{kind: kind, current: m.current, close: func() error {
			err := w.Close(ctx)
			<-done
			return err
		}}
	case "WatchData", "WatchChildren":
		var mu sync.Mutex
		var held string   // WatchData: the data
		var kids []string // WatchChildren: the children
		wctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			if kind == "WatchData" {
				done <- zr.WatchData(wctx, s, p, func(data []byte, _ *zr.NodeStat) error {
					mu.Lock()
					held = string(data)
					mu.Unlock()
					return nil
				})
				return
			}
			done <- zr.WatchChildren(wctx, s, p, func(k []string, _ *zr.NodeStat) error {
				mu.Lock()
				kids = slices.Clone(k)
				mu.Unlock()
				return nil
			})
		}()
		t.Cleanup(cancel)
		return &sharedPathWatcher{kind: kind, current: func(i int) (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			if kind == "WatchData" {
				return held == want(i), held
			}
			return slices.Contains(kids, fmt.Sprintf("c%d", i)), fmt.Sprint(kids)
		}, close: func() error {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		}}
	}
	t.Fatalf("no kind %s", kind)
	return nil
}

// mirror is a PersistentWatch's reader as an application writes it: it
// reads what an event says changed (everything after a WatchReset), and
// keeps what it read.
type mirror struct {
	s   *zr.Session
	p   string
	rec bool

	mu   sync.Mutex
	data string          // p's data (plain), p/kid's (recursive)
	kids map[string]bool // children of p seen
}

func (m *mirror) follow(w *zr.PersistentWatch) {
	needData, needKids := true, true
	tick := time.NewTicker(20 * time.Millisecond) // retry reads that failed (connection down)
	defer tick.Stop()
	target := m.p
	if m.rec {
		target = m.p + "/kid"
	}
	for {
		select {
		case e, ok := <-w.Events():
			if !ok {
				return
			}
			switch {
			case e.Kind == zr.WatchReset:
				needData, needKids = true, true
			case e.Kind == zr.WatchDataChanged && e.Path == target:
				needData = true
			case e.Kind == zr.WatchChildrenChanged && e.Path == m.p && !m.rec:
				needKids = true
			case e.Kind == zr.WatchNodeCreated && m.rec:
				m.mu.Lock()
				m.kids[e.Path[len(m.p)+1:]] = true
				m.mu.Unlock()
			}
		case <-tick.C:
		}
		if needData {
			if d, _, err := m.s.Conn().Get(target); err == nil {
				m.mu.Lock()
				m.data = string(d)
				m.mu.Unlock()
				needData = false
			}
		}
		if needKids {
			if kids, _, err := m.s.Conn().Children(m.p); err == nil {
				m.mu.Lock()
				for _, k := range kids {
					m.kids[k] = true
				}
				m.mu.Unlock()
				needKids = false
			}
		}
	}
}

func (m *mirror) current(i int) (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := fmt.Sprintf("c%d", i)
	return m.data == strconv.Itoa(i) && m.kids[c], fmt.Sprintf("data=%q %s:%v", m.data, c, m.kids[c])
}

// sharedPathHeavy are the pairs, one per kind of mix of server watches
// (recursive, plain, one-shot data, one-shot child), that also go through
// a reconnection and a new session; every other pair goes through Start
// and Close only, which is where the order of the two matters.
var sharedPathHeavy = map[[2]string]bool{
	{"TreeCache", "RecursiveWatch"}:      true, // recursive + recursive
	{"TreeCache", "NodeCache"}:           true, // recursive + plain
	{"NodeCache", "TreeCache"}:           true, // plain + recursive
	{"NodeCache", "PersistentWatch"}:     true, // plain + plain
	{"WatchData", "TreeCache"}:           true, // one-shot data + recursive
	{"TreeCache", "WatchChildren"}:       true, // recursive + one-shot child
	{"NodeCache", "WatchData"}:           true, // plain + one-shot data
	{"PersistentWatch", "WatchChildren"}: true, // plain + one-shot child
}

// Any two watchers on one path of one Session, started in either order,
// stay current, and the one left after the other's Close stays current
// too, also for a change made while that Close runs. One pair of each kind
// of mix also stays current through a reconnection and a new session
// (the server's watches set again).
func TestWatchersOnOnePathStayCurrentWhateverTheMixAndOrder(t *testing.T) {
	c := server(t)
	if wireOff() {
		t.Skip("persistent watches need the wire layer")
	}
	other := raw(t, c)
	persistent := func(k string) bool { return k != "WatchData" && k != "WatchChildren" }
	for _, a := range sharedPathKinds {
		for _, b := range sharedPathKinds {
			if a == b || !persistent(a) && !persistent(b) {
				continue
			}
			for _, closeFirst := range []bool{true, false} {
				closing := map[bool]string{true: "first", false: "second"}[closeFirst]
				heavy := closeFirst && sharedPathHeavy[[2]string{a, b}]
				t.Run(fmt.Sprintf("%s_then_%s_close_%s", a, b, closing), func(t *testing.T) {
					t.Parallel() // a path and a Session of its own
					sharedPathCase(t, c, other, a, b, closeFirst, heavy)
				})
			}
		}
	}
}

func sharedPathCase(t *testing.T, c *zktest.Cluster, other *zk.Conn, a, b string, closeFirst, heavy bool) {
	p := testPath(t)
	freshPath(t, other, p)
	mkdirs(t, other, p+"/kid")
	proxy := zktest.NewProxy(t, c.Servers()[0])
	s := connect(t, c, []string{proxy.Addr()})
	wa := startSharedPath(t, s.Session, p, a)
	wb := startSharedPath(t, s.Session, p, b)
	both := []*sharedPathWatcher{wa, wb}
	t.Cleanup(func() {
		for _, w := range both {
			_ = w.close()
		}
	})
	i := 0
	check := func(stage string, ws ...*sharedPathWatcher) {
		t.Helper()
		for _, w := range ws {
			if !assert.Eventuallyf(t, func() bool {
				ok, _ := w.current(i)
				return ok
			}, 10*time.Second, 5*time.Millisecond, "%s: %s does not reflect change %d", stage, w.kind, i) {
				_, held := w.current(i)
				t.Fatalf("%s: %s holds %s", stage, w.kind, held)
			}
		}
	}
	bump := func() {
		t.Helper()
		i++
		require.NoError(t, bumpSharedPath(other, p, i))
	}
	bump()
	check("both started", both...)

	if heavy {
		proxy.ResetAll() // the Session resumes on a new connection
		bump()
		check("after a reconnection", both...)

		s.expire(t) // a new session
		bump()
		check("in a new session", both...)
	}

	gone, left := wa, wb
	if !closeFirst {
		gone, left = wb, wa
	}
	// Changes while the Close runs: its requests take a while (the proxy's
	// delay), and a change may fall anywhere in them.
	proxy.SetDelay(20 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- gone.close() }()
	both = []*sharedPathWatcher{left}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for closing := true; closing; {
		select {
		case err := <-closed:
			require.NoError(t, err, "Close of %s", gone.kind)
			closing = false
		case <-tick.C:
			bump()
		}
	}
	check("after the other's Close", left)
	proxy.SetDelay(0)
	bump()
	check("after the other's Close, a change more", left)
}
