package zkrecipes

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// How a TreeCache keeps its copy (docs/design-caches.md): one goroutine
// (run) reads, in order, what each notification names; the Session routes
// the notifications of the subtree to it (notify.go), so no goroutine
// waits on a watch. Reads done one after another in one ZooKeeper session
// never go back in time, so the copy only moves forward. Bulk loads (the
// first, after every reconnection, and a new subtree) send up to
// maxTreeReads reads at once; each node is read once per load, with
// watches, and the notifications that arrive meanwhile are handled after
// the load, so a change after a node's read is never lost.

// maxTreeReads bounds the reads a TreeCache has in flight while it loads.
const maxTreeReads = 64

// note is the cache's notification route: it never blocks.
func (c *TreeCache) note(ev zk.Event) {
	c.nmu.Lock()
	c.queue = append(c.queue, ev)
	c.nmu.Unlock()
	select {
	case c.noted <- struct{}{}:
	default:
	}
}

func (c *TreeCache) takeNotes() []zk.Event {
	c.nmu.Lock()
	defer c.nmu.Unlock()
	q := c.queue
	c.queue = nil
	return q
}

// run keeps the copy up to date until ctx ends or a read fails for good:
// on one persistent recursive watch where the Session and the server can
// set one (treecache_persistent.go), else on one-shot watches.
func (c *TreeCache) run(ctx context.Context, states <-chan StateChange) {
	w, err := openCacheWatch(ctx, c.s, c.path, true)
	if err == nil {
		c.persistent.Store(true)
		err = c.followPersistent(ctx, w, states)
		c.s.closeCacheWatch(w)
		c.persistent.Store(false) // on a server that predates it after a reconnection: one-shot watches
	}
	if errors.Is(err, ErrPersistentWatchUnsupported) {
		// The route is taken before the first read, so that no change
		// after it goes unnoticed.
		unroute := c.s.watchTree(c.abs, c.note)
		err = c.follow(ctx, states)
		unroute()
	}
	c.end(c.s, err)
}

// follow loads the tree, then handles notifications and connection
// changes. The whole tree is read again after every reconnection (a
// notification may have been lost with the connection; after a session
// expiry every watch is gone), and after a read failed on a lost
// connection, once connected.
func (c *TreeCache) follow(ctx context.Context, states <-chan StateChange) error {
	resync := true
	var retry <-chan time.Time
	backoff := 10 * time.Millisecond
	fail := func(err error) error {
		if !lostConnection(err) {
			return err
		}
		resync, retry = true, time.After(backoff)
		backoff = min(2*backoff, time.Second)
		return nil
	}
	for {
		if resync && retry == nil && c.s.State().connected() {
			if err := c.resync(ctx); err == nil {
				resync, backoff = false, 10*time.Millisecond
			} else if err := fail(err); err != nil {
				return err
			}
		}
		select {
		case <-c.noted:
			if resync {
				break // the resync takes the notifications, and clears the watches they fired
			}
			if err := fail(c.handle(ctx, c.takeNotes())); err != nil {
				return err
			}
		case <-retry:
			retry = nil
		case sc, ok := <-states:
			if !ok || sc.State == StateClosed {
				return ErrClosed
			}
			c.onState(sc)
			if sc.State == StateReconnected || sc.State == StateLost {
				resync, retry = true, nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lostConnection tells a read that failed with the connection or the
// session (to be done again once connected) from one that cannot pass.
func lostConnection(err error) bool {
	return err != nil && (isRetryable(err) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing))
}

// onState queues the connection states a reader of the cache cares about.
func (c *TreeCache) onState(sc StateChange) {
	kind, ok := map[ConnState]CacheEventKind{StateSuspended: CacheSuspended, StateReconnected: CacheReconnected, StateLost: CacheLost}[sc.State]
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded { // before the load, Start's caller learns of it by waiting
		c.pend.push(CacheEvent{Kind: kind, State: sc})
		c.signal()
	}
}

// resync reads the whole tree and makes the copy equal to it: what is
// gone or was replaced (a new czxid) is deleted, children first, then
// what is new is created, parents first, and what changed is updated.
//
// Reading the whole tree with watches again would register a second watch
// per node with go-zookeeper after every reconnection (it keeps a channel
// per watch until the watch fires). So under the same session, on a
// connection made by Connect (whose callback sees every notification), a
// node whose watches are still set is read without new ones: go-zookeeper
// set them again on the server when it reconnected, and the server
// notifies at once of what changed meanwhile.
func (c *TreeCache) resync(ctx context.Context) error {
	sid := c.s.SessionID()
	c.mu.Lock()
	c.disarm(c.takeNotes()) // the reads below cover what they report
	if c.armedIn != sid || !c.s.direct {
		for _, n := range c.nodes {
			n.armed = 0
		}
	}
	c.mu.Unlock()
	loaded, err := c.loadRoot(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armedIn = 0
	if c.s.SessionID() == sid {
		c.armedIn = sid
	}
	fresh := make(map[string]*loadedNode, len(loaded))
	for i := range loaded {
		fresh[loaded[i].path] = &loaded[i]
	}
	if _, ok := c.nodes[c.path]; ok {
		c.prune(c.path, fresh)
	}
	c.merge(loaded)
	c.s.reportCacheSync(c.cfg.kind, c.cfg.name, c.path, !c.loaded, len(c.nodes), c.pend.len()) // observe.go
	if !c.loaded {
		c.loaded = true
		c.pend.push(CacheEvent{Kind: CacheInitialized})
		c.signal()
		close(c.ready)
	}
	return nil
}

// prune removes the nodes at or below p that fresh does not hold, or
// holds with another czxid (c.mu held).
func (c *TreeCache) prune(p string, fresh map[string]*loadedNode) {
	n := c.nodes[p]
	if f := fresh[p]; f == nil || f.stat.Czxid != n.stat.Czxid {
		c.removeAttached(p)
		return
	}
	for _, k := range slices.Clone(n.children()) {
		c.prune(joinPath(p, k), fresh)
	}
}

// handle reads again what the notifications name, once each: listings
// first, then data, each in the order they came. A deletion notifies the
// node and its parent; the parent's listing removes the node, and its
// getData is then not needed.
func (c *TreeCache) handle(ctx context.Context, notes []zk.Event) error {
	type what struct {
		path string
		kids bool
	}
	c.mu.Lock()
	c.disarm(notes)
	c.mu.Unlock()
	seen := make(map[what]bool, len(notes))
	var todo []what
	for _, ev := range notes {
		w := what{c.s.rel(ev.Path), ev.Type == zk.EventNodeChildrenChanged}
		if !seen[w] {
			seen[w] = true
			todo = append(todo, w)
		}
	}
	slices.SortStableFunc(todo, func(a, b what) int {
		switch {
		case a.kids == b.kids:
			return 0
		case a.kids:
			return -1
		}
		return 1
	})
	for _, w := range todo {
		op, refresh := "getData", c.refreshData
		if w.kids {
			op, refresh = "getChildren", c.refreshChildren
		}
		if err := refresh(ctx, w.path); err != nil {
			return c.s.opError(op, c.s.abs(w.path), err)
		}
	}
	return nil
}

// disarm clears the watches the notifications fired (c.mu held).
func (c *TreeCache) disarm(notes []zk.Event) {
	for _, ev := range notes {
		n := c.nodes[c.s.rel(ev.Path)]
		if n == nil {
			continue
		}
		switch ev.Type {
		case zk.EventNodeChildrenChanged:
			n.armed &^= armKids
		case zk.EventNodeDeleted:
			n.armed = 0
		default:
			n.armed &^= armData
		}
	}
}

// refreshData reads the node at p again after a notification on it: a
// data change, its deletion, or (the root only) its creation.
func (c *TreeCache) refreshData(ctx context.Context, p string) error {
	if !c.holds(p) && p != c.path {
		return nil // gone meanwhile, or never cached
	}
	data, st, _, err := c.s.getW(ctx, c.s.abs(p))
	if errors.Is(err, zk.ErrNoNode) {
		return c.gone(ctx, p)
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	n := c.nodes[p]
	switch {
	case n == nil: // the root, created
		c.mu.Unlock()
		return c.reloadRoot(ctx)
	case st.Czxid != n.stat.Czxid: // deleted and created again
		c.removeAttached(p)
		c.mu.Unlock()
		return c.loadMerge(ctx, p)
	case st.Mzxid > n.stat.Mzxid:
		n.data, n.stat, n.armed = c.decoded(p, data), *st, n.armed|armData
		c.emit(NodeChanged, p, n)
	default:
		n.stat, n.armed = *st, n.armed|armData
	}
	c.mu.Unlock()
	return nil
}

// refreshChildren lists the node at p again after its children changed:
// the children gone are deleted, the new ones loaded.
func (c *TreeCache) refreshChildren(ctx context.Context, p string) error {
	if !c.holds(p) || !c.listed(p) {
		return nil
	}
	kids, st, _, err := c.s.childrenStatW(ctx, c.s.abs(p))
	if errors.Is(err, zk.ErrNoNode) {
		return c.gone(ctx, p)
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	n := c.nodes[p]
	if n == nil {
		c.mu.Unlock()
		return nil
	}
	if st.Czxid != n.stat.Czxid {
		c.removeAttached(p)
		c.mu.Unlock()
		return c.loadMerge(ctx, p)
	}
	n.stat.Pzxid, n.stat.Cversion, n.stat.NumChildren = st.Pzxid, st.Cversion, st.NumChildren
	n.armed |= armKids
	listed := make(map[string]bool, len(kids))
	for _, k := range kids {
		if c.keep(joinPath(p, k)) {
			listed[k] = true
		}
	}
	var kept []string
	for _, k := range n.children() {
		if listed[k] {
			kept = append(kept, k)
			delete(listed, k)
		} else {
			c.removeTree(joinPath(p, k))
		}
	}
	n.setChildren(kept)
	var add []string
	for k := range listed {
		add = append(add, joinPath(p, k))
	}
	c.mu.Unlock()
	slices.Sort(add)
	return c.loadMerge(ctx, add...)
}

// gone removes the node at p, which a read found deleted; for the root,
// it then watches for its creation.
func (c *TreeCache) gone(ctx context.Context, p string) error {
	c.mu.Lock()
	c.removeAttached(p)
	c.mu.Unlock()
	if p == c.path {
		return c.reloadRoot(ctx)
	}
	return nil
}

func (c *TreeCache) holds(p string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[p] != nil
}

// listed tells whether the cache lists (and watches) the children of p.
func (c *TreeCache) listed(p string) bool {
	return c.cfg.maxDepth < 0 || strings.Count(p[len(c.path):], "/") < c.cfg.maxDepth
}

// keep tells whether the cache holds the node at p, given its parent's.
func (c *TreeCache) keep(p string) bool { return c.cfg.keep == nil || c.cfg.keep(p) }

// loadedNode is one node read by load.
type loadedNode struct {
	path  string
	data  []byte
	stat  *zk.Stat
	armed watchBits // the node's watches set after the read
}

// reloadRoot loads the whole tree into the copy; when the root does not
// exist, it leaves a watch for its creation.
func (c *TreeCache) reloadRoot(ctx context.Context) error {
	loaded, err := c.loadRoot(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.merge(loaded)
	c.mu.Unlock()
	return nil
}

// loadRoot reads the whole tree; when the root does not exist, it sets a
// watch for its creation and returns nothing.
func (c *TreeCache) loadRoot(ctx context.Context) ([]loadedNode, error) {
	for {
		loaded, err := c.load(ctx, c.path)
		if err != nil || len(loaded) > 0 || c.persistent.Load() {
			return loaded, err // the persistent watch reports the root's creation
		}
		ok, _, err := c.s.existsW(ctx, c.abs)
		if err != nil || !ok {
			return nil, err
		}
	}
}

// loadMerge reads the subtrees at paths and adds them to the copy.
func (c *TreeCache) loadMerge(ctx context.Context, paths ...string) error {
	if len(paths) == 0 {
		return nil
	}
	loaded, err := c.load(ctx, paths...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.merge(loaded)
	c.mu.Unlock()
	return nil
}

// load reads the subtrees at roots, each node once with a data and a
// children watch, up to maxTreeReads nodes at a time, and returns them
// parents first. A node deleted while it is read is left out: its
// parent's children watch reports it.
func (c *TreeCache) load(ctx context.Context, roots ...string) ([]loadedNode, error) {
	type result struct {
		n    loadedNode
		kids []string
		err  error
	}
	results := make(chan result, maxTreeReads) // room for every read in flight: none blocks after an early return
	todo := slices.Clone(roots)
	var out []loadedNode
	for next, running := 0, 0; next < len(todo) || running > 0; {
		for ; next < len(todo) && running < maxTreeReads; next++ {
			if err := ctx.Err(); err != nil {
				return nil, err // closed: start no read
			}
			p := todo[next]
			list := c.listed(p)
			c.mu.Lock()
			var armed watchBits
			if n := c.nodes[p]; n != nil {
				armed = n.armed
			}
			c.mu.Unlock()
			if !c.s.spawn(func() {
				n, kids, err := c.read(ctx, p, list, armed)
				results <- result{n, kids, err}
			}) {
				return nil, ErrClosed
			}
			running++
		}
		var r result
		select {
		case r = <-results:
			running--
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if r.err != nil {
			return nil, r.err
		}
		if r.n.stat == nil {
			continue
		}
		out = append(out, r.n)
		for _, k := range r.kids {
			if kp := joinPath(r.n.path, k); c.keep(kp) {
				todo = append(todo, kp)
			}
		}
		if next > 1024 && next*2 > len(todo) {
			todo = slices.Delete(todo, 0, next)
			next = 0
		}
	}
	return out, nil
}

// read reads the node at p with a data watch and, when list is set, lists
// it with a children watch; a watch the node has already (armed) is not
// set again. A node not found, or found replaced between the two reads, is
// returned with a nil stat. Once ctx ends (the cache is closed) it sends
// nothing more: its caller may have returned, and so may Close, while the
// first read waited on a connection that was cut off.
func (c *TreeCache) read(ctx context.Context, p string, list bool, armed watchBits) (loadedNode, []string, error) {
	if err := ctx.Err(); err != nil {
		return loadedNode{}, nil, err
	}
	abs := c.s.abs(p)
	persistent := c.persistent.Load()
	if persistent {
		armed = armData | armKids // the persistent watch watches it: no watch is set
	}
	g, err := traced(c.s, "getData", abs, c.s.getReq(abs, armed&armData == 0))
	if err == nil && persistent && g.stat.NumChildren == 0 {
		list = false // nothing to list: a child created after the read is reported by the watch
	}
	var kids []string
	if err == nil && list {
		if err := ctx.Err(); err != nil {
			return loadedNode{}, nil, err
		}
		var k childrenResult
		k, err = traced(c.s, "getChildren", abs, c.s.childrenReq(abs, armed&armKids == 0))
		if err == nil && k.stat.Czxid != g.stat.Czxid {
			err = zk.ErrNoNode
		}
		kids = k.kids
	}
	if errors.Is(err, zk.ErrNoNode) {
		return loadedNode{path: p}, nil, nil
	}
	if err != nil {
		return loadedNode{}, nil, c.s.opError("getData", abs, err)
	}
	switch {
	case persistent:
		armed = 0 // no one-shot watch is set (should the cache fall back to them, it sets them all)
	case list:
		armed = armData | armKids
	default:
		armed = armData
	}
	return loadedNode{path: p, data: g.data, stat: g.stat, armed: armed}, kids, nil
}

// merge adds loaded nodes (parents first) to the copy, and updates those
// it holds (c.mu held).
func (c *TreeCache) merge(loaded []loadedNode) {
	for _, f := range loaded {
		n := c.nodes[f.path]
		switch {
		case n != nil && f.stat.Czxid != n.stat.Czxid:
			c.removeAttached(f.path)
			c.insert(f)
		case n == nil:
			c.insert(f)
		case f.stat.Mzxid > n.stat.Mzxid:
			n.data, n.stat, n.armed = c.decoded(f.path, f.data), *f.stat, f.armed
			c.emit(NodeChanged, f.path, n)
		default:
			n.stat, n.armed = *f.stat, f.armed
		}
	}
}

// insert adds a node under its cached parent (c.mu held).
func (c *TreeCache) insert(f loadedNode) {
	if f.path != c.path {
		parent := c.nodes[parentPath(f.path)]
		if parent == nil {
			return // its parent is gone meanwhile
		}
		parent.setChildren(append(parent.children(), baseName(f.path)))
	}
	n := &treeNode{data: c.decoded(f.path, f.data), stat: *f.stat, armed: f.armed}
	c.nodes[f.path] = n
	c.emit(NodeCreated, f.path, n)
}

// removeAttached removes the node at p and its descendants, and p from
// its parent's children (c.mu held).
func (c *TreeCache) removeAttached(p string) {
	if c.nodes[p] == nil {
		return
	}
	c.removeTree(p)
	if p == c.path {
		return
	}
	if parent := c.nodes[parentPath(p)]; parent != nil {
		kids := parent.children()
		if i := slices.Index(kids, baseName(p)); i >= 0 {
			last := len(kids) - 1
			kids[i] = kids[last]
			kids[last] = ""
			parent.setChildren(kids[:last])
		}
	}
}

// removeTree removes the node at p and its descendants, children first,
// leaving its parent's children as they are (c.mu held).
func (c *TreeCache) removeTree(p string) {
	n := c.nodes[p]
	if n == nil {
		return
	}
	for _, k := range n.children() {
		c.removeTree(joinPath(p, k))
	}
	n.kids = nil
	delete(c.nodes, p)
	c.emit(NodeDeleted, p, n)
}
