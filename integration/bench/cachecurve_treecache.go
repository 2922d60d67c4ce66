package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// CacheRun is one run of the cache curve by one implementation: a
// zkrecipes TreeCache (TreeCacheRun), the raw floor (RawTreeLoad) or
// Curator's CuratorCache (CuratorCacheRun). A figure an implementation is
// not measured for is zero.
type CacheRun struct {
	// Nodes is the nodes loaded (the floor: read).
	Nodes int `json:"nodes"`
	// Load is the time from Start to the cache's initialized event (the
	// floor: from the first read to the last reply).
	Load time.Duration `json:"load_ns"`
	// HeapPerNode is the heap the loaded cache keeps, per node: the live
	// heap after a GC once loaded, less the one before Start (the JVM's used
	// heap for Curator).
	HeapPerNode float64 `json:"heap_bytes_per_node,omitempty"`
	// ServerWatches is what the cache adds to the server's zk_watch_count
	// (mntr) once loaded.
	ServerWatches int64 `json:"server_watches,omitempty"`
	// Mismatches is the nodes in which the loaded cache and a fresh
	// listing of the tree differ: missing on either side, or with other
	// data, Czxid or Mzxid.
	Mismatches int `json:"mismatches"`
	// Resync is the time from the end of a connection drop (the server
	// reachable again, the client's new connection waiting) until the
	// cache holds the change made during the drop and the server's watch
	// count is back; EventsMissed is the events of that change (one each
	// of NodeChanged, NodeCreated, NodeDeleted) the cache did not deliver.
	Resync       time.Duration `json:"resync_ns,omitempty"`
	EventsMissed int           `json:"events_missed"`
}

// TreeCacheRun measures a zkrecipes TreeCache of the tree at root, twice
// on a Session of its own. First connected to the server directly, as the
// floor is: the load (Start until its CacheInitialized event is read, the
// events read as they come), the heap it keeps per node (after a GC, the
// events read), the server watches it adds, and the mismatches against a
// fresh listing (walkTree on a plain connection). Then, loaded again
// unmeasured, through a loopback proxy (zktest.Proxy): the resync after a
// connection drop (resyncAfterDrop; rep picks the nodes it changes, so
// that the repetitions leave the node count as it was).
func TreeCacheRun(ctx context.Context, env Env, root string, rep int) (CacheRun, error) {
	r, err := treeCacheLoad(ctx, env, root)
	if err != nil {
		return CacheRun{}, err
	}
	proxy, err := zktest.ListenProxy(env.ServerFor(0)[0])
	if err != nil {
		return CacheRun{}, err
	}
	defer proxy.Close()
	c, evs, _, closeCache, err := startTreeCache(ctx, []string{proxy.Addr()}, root, nil)
	defer closeCache()
	if err != nil {
		return CacheRun{}, err
	}
	w, err := env.Meter.Read(ctx)
	if err != nil {
		return CacheRun{}, err
	}
	r.Resync, r.EventsMissed, err = resyncAfterDrop(ctx, env, proxy, c, evs, root, rep, w.Watches)
	return r, err
}

// treeCacheLoad measures the load of a TreeCache of root on a Session of
// its own connected to the server directly (see TreeCacheRun).
func treeCacheLoad(ctx context.Context, env Env, root string) (CacheRun, error) {
	cost := &loadCost{env: env}
	c, _, load, closeCache, err := startTreeCache(ctx, env.ServerFor(0), root, cost.baseline(ctx))
	defer closeCache()
	if err != nil {
		return CacheRun{}, err
	}
	r := CacheRun{Load: load, Nodes: c.Len()}
	if err := cost.measure(ctx, &r); err != nil {
		return CacheRun{}, err
	}
	r.Mismatches, err = treeMismatches(ctx, env, root, c)
	return r, err
}

// loadCost measures what a cache's load adds to this process's live heap
// and to the server's watches: from its baseline, taken right before the
// cache starts, to its measure, once it is loaded.
type loadCost struct {
	env   Env
	heap0 uint64
	w0    Counters
}

// baseline returns the hook that takes the baseline (a start's before).
func (l *loadCost) baseline(ctx context.Context) func() error {
	return func() (err error) {
		l.heap0, _ = settled(0)
		l.w0, err = l.env.Meter.Read(ctx)
		return err
	}
}

// measure sets r's HeapPerNode (over r.Nodes) and ServerWatches.
func (l *loadCost) measure(ctx context.Context, r *CacheRun) error {
	heap1, _ := settled(0)
	r.HeapPerNode = (float64(heap1) - float64(l.heap0)) / float64(max(r.Nodes, 1))
	w1, err := l.env.Meter.Read(ctx)
	if err != nil {
		return err
	}
	r.ServerWatches = w1.Watches - l.w0.Watches
	return nil
}

// startTreeCache connects a Session to servers, as the benchmarks do but
// with ensemble tracking off (its watch is not the cache's, and a proxy
// is not in the configuration), calls before (unless nil), and starts a
// TreeCache of root on the Session, its events read as they come; it
// returns once the cache's CacheInitialized event is read, and the time
// since Start. closeCache closes the cache and the Session; call it even
// after an error.
func startTreeCache(ctx context.Context, servers []string, root string, before func() error) (
	c *zr.TreeCache, evs *cacheEvents, load time.Duration, closeCache func(), err error) {
	closeCache = func() {}
	s, err := connectCacheSession(ctx, servers)
	if err != nil {
		return nil, nil, 0, closeCache, err
	}
	c = zr.NewTreeCache(s, root)
	closeCache = func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(cctx)
		_ = s.Close()
	}
	evs = readCacheEvents(c)
	if before != nil {
		if err := before(); err != nil {
			return nil, nil, 0, closeCache, err
		}
	}
	t0 := time.Now()
	if err := c.Start(ctx); err != nil {
		return nil, nil, 0, closeCache, err
	}
	select {
	case <-evs.initialized:
		return c, evs, time.Since(t0), closeCache, nil
	case <-ctx.Done():
		return nil, nil, 0, closeCache, fmt.Errorf("bench: tree cache of %s: not initialized: %w", root, ctx.Err())
	}
}

// connectCacheSession connects a Session to servers for a cache of the
// cache and service curves: as the benchmarks do, but with ensemble
// tracking off (its watch is not the cache's, and a proxy is not in the
// configuration).
func connectCacheSession(ctx context.Context, servers []string) (*zr.Session, error) {
	return zr.Connect(ctx, servers, zr.WithSessionTimeout(SessionTimeout), zr.WithDialer(LoopbackDialer), zr.WithEnsembleTracking(false))
}

// cacheEvents reads a TreeCache's events as they come, keeping only what
// the cache curve checks: that the cache was initialized, suspended, and
// which node events it delivered at the paths it expects.
type cacheEvents struct {
	initialized chan struct{} // closed on CacheInitialized
	suspended   chan struct{} // receives each CacheSuspended (buffered, 1)
	seen        chan struct{} // receives each expected event (buffered, 1)

	mu       sync.Mutex
	expected map[string]zr.CacheEventKind // path: the event expected there
	got      map[string]bool              // the expected events delivered
}

// readCacheEvents reads c's events until its Events channel closes.
func readCacheEvents(c *zr.TreeCache) *cacheEvents {
	e := &cacheEvents{initialized: make(chan struct{}), suspended: make(chan struct{}, 1), seen: make(chan struct{}, 1)}
	go func() {
		for ev := range c.Events() {
			switch ev.Kind {
			case zr.CacheInitialized:
				close(e.initialized)
			case zr.CacheSuspended:
				signalOne(e.suspended)
			case zr.NodeCreated, zr.NodeChanged, zr.NodeDeleted:
				e.mu.Lock()
				if ev.Node != nil && e.expected[ev.Node.Path] == ev.Kind {
					e.got[ev.Node.Path] = true
					signalOne(e.seen)
				}
				e.mu.Unlock()
			}
		}
	}()
	return e
}

func signalOne(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// expect sets the events expected from now on, forgetting those before.
func (e *cacheEvents) expect(want map[string]zr.CacheEventKind) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expected, e.got = want, map[string]bool{}
}

// missing returns how many of the expected events were not delivered
// within d.
func (e *cacheEvents) missing(d time.Duration) int {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		n := len(e.expected) - len(e.got)
		e.mu.Unlock()
		if n == 0 {
			return 0
		}
		select {
		case <-e.seen:
		case <-deadline.C:
			return n
		}
	}
}

// treeMismatches compares c with a fresh listing of the tree at root
// (walkTree on a plain connection of its own, 32 goroutines): the nodes
// read that c lacks or holds with other data, Czxid or Mzxid, plus the
// nodes c holds beyond those read.
func treeMismatches(ctx context.Context, env Env, root string, c *zr.TreeCache) (int, error) {
	conn, err := ConnectRaw(ctx, env.ServerFor(0))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var matched, differ atomic.Int64
	_, err = walkTree(ctx, conn, root, RawTreeLoadWorkers, func(p string, data []byte, st *zk.Stat) {
		n, ok := c.Get(p)
		if ok && bytes.Equal(n.Data, data) && n.Stat.Czxid == st.Czxid && n.Stat.Mzxid == st.Mzxid {
			matched.Add(1)
		} else {
			differ.Add(1)
		}
	})
	if err != nil {
		return 0, err
	}
	return int(differ.Load()) + max(c.Len()-int(matched.Load()), 0), nil
}

// resyncAfterDrop drops the cache's connection and measures its resync
// (timeResync): during the drop, once the cache reports CacheSuspended,
// it changes the tree through env's Observer (a node's data set, a node
// created, a leaf deleted: the nodes rep picks), and the cache is whole
// again once it holds the three changes. It returns the resync and how
// many of the three changes' events the cache did not deliver within 10 s
// after.
func resyncAfterDrop(ctx context.Context, env Env, proxy *zktest.Proxy, c *zr.TreeCache, evs *cacheEvents, root string, rep int, watches int64) (time.Duration, int, error) {
	set := root + "/c0000/g0000"
	created := fmt.Sprintf("%s/c0000/resync-r%d", root, rep)
	deleted := fmt.Sprintf("%s/c0001/g%04d", root, rep)
	data := []byte(fmt.Sprintf("set during drop %d", rep))
	evs.expect(map[string]zr.CacheEventKind{set: zr.NodeChanged, created: zr.NodeCreated, deleted: zr.NodeDeleted})
	select {
	case <-evs.suspended: // none is expected before the drop
	default:
	}
	suspended := func() error {
		if err := waitFor(ctx, 10*time.Second, evs.suspended); err != nil {
			return fmt.Errorf("bench: tree cache of %s: no CacheSuspended after the drop: %w", root, err)
		}
		return nil
	}
	change := func() error {
		return changeDuringDrop(env.Observer, []any{
			&zk.SetDataRequest{Path: set, Data: data, Version: -1},
			&zk.CreateRequest{Path: created, Data: data, Acl: zk.WorldACL(zk.PermAll)},
			&zk.DeleteRequest{Path: deleted, Version: -1},
		})
	}
	whole := func() bool {
		n, ok := c.Get(set)
		_, hasCreated := c.Get(created)
		_, hasDeleted := c.Get(deleted)
		return ok && bytes.Equal(n.Data, data) && hasCreated && !hasDeleted
	}
	took, err := timeResync(ctx, env, proxy, "tree cache of "+root, watches, suspended, change, whole)
	if err != nil {
		return 0, 0, err
	}
	return took, evs.missing(10 * time.Second), nil
}

// changeDuringDrop sends ops on o, one request each (a create, setData or
// delete), in order.
func changeDuringDrop(o *zk.Conn, ops []any) error {
	for _, op := range ops {
		var err error
		var p string
		switch r := op.(type) {
		case *zk.SetDataRequest:
			p = r.Path
			_, err = o.Set(r.Path, r.Data, r.Version)
		case *zk.CreateRequest:
			p = r.Path
			_, err = o.Create(r.Path, r.Data, r.Flags, r.Acl)
		case *zk.DeleteRequest:
			p = r.Path
			err = o.Delete(r.Path, r.Version)
		default:
			return fmt.Errorf("bench: change during the drop: %T", op)
		}
		if err != nil {
			return fmt.Errorf("bench: change %s during the drop: %w", p, err)
		}
	}
	return nil
}

// timeResync drops a cache's connection and measures its resync. It
// black-holes the proxy and resets every connection through it; once
// suspended returns (the cache has seen the drop) it calls change; once
// the client's new connection waits in the proxy, it heals the proxy and
// starts the clock, which stops when whole reports true and the server's
// watch count is watches again (5 minutes at most). what names the cache
// in an error.
func timeResync(ctx context.Context, env Env, proxy *zktest.Proxy, what string, watches int64, suspended, change func() error, whole func() bool) (time.Duration, error) {
	proxy.Blackhole()
	defer proxy.Heal()
	proxy.ResetAll()
	if err := suspended(); err != nil {
		return 0, err
	}
	if err := change(); err != nil {
		return 0, err
	}
	// The reset connection leaves the proxy, then the client's next one
	// arrives (go-zookeeper waits a second before it dials its one server
	// again) and waits there. Should the next one be there already, the
	// count does not fall to 0: wait 2 s at most for that.
	_ = poll(ctx, 2*time.Second, time.Millisecond, func() (bool, error) { return proxy.Conns() == 0, nil })
	if err := poll(ctx, 10*time.Second, time.Millisecond, func() (bool, error) { return proxy.Conns() > 0, nil }); err != nil {
		return 0, fmt.Errorf("bench: the client does not connect again: %w", err)
	}
	t0 := time.Now()
	proxy.Heal()
	var last int64
	err := poll(ctx, 5*time.Minute, time.Millisecond, func() (bool, error) {
		if !whole() {
			return false, nil
		}
		w, err := env.Meter.Read(ctx)
		last = w.Watches
		return err == nil && w.Watches == watches, err
	})
	took := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("bench: %s after the drop: whole %v, server watches %d (before the drop %d): %w",
			what, whole(), last, watches, err)
	}
	return took, nil
}

// waitFor waits until ch receives, d passes or ctx ends.
func waitFor(ctx context.Context, d time.Duration, ch <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return fmt.Errorf("not within %v", d)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// poll calls cond every interval until it returns true or an error, d
// passes or ctx ends.
func poll(ctx context.Context, d, every time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("not within " + d.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}
