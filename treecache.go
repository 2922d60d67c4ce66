package zkrecipes

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// TreeCache keeps a local copy of a node and its descendants (data and
// Stat of each), like Curator's CuratorCache and kazoo's TreeCache: it
// loads the tree, watches every node in it, and reads again what changes,
// after every notification, reconnection and session expiry.
//
// Get, Children and Snapshot read the local copy. Events delivers what
// changed, in order: first NodeCreated for every node Start loaded
// (parents before their children), then CacheInitialized (Node nil); then
// NodeCreated, NodeChanged and NodeDeleted as the tree changes (a parent's
// creation before its children's, their deletions before its own), and
// CacheSuspended, CacheReconnected and CacheLost as the Session's
// connection does (between CacheSuspended and CacheReconnected the copy
// may be stale; after CacheReconnected the tree is read again and what
// changed meanwhile follows as node events). Replaying the node events
// from an empty tree gives what Snapshot returns once the events are
// drained. A node deleted and created again is reported as NodeDeleted
// then NodeCreated with a new Czxid, even when both happened while the
// connection was down; the events of one node come in Mzxid order.
//
// Back-pressure: the cache never waits for its reader, and never blocks
// the Session. While events are not received, they wait in a queue where
// a node's data changes are merged into the node's last undelivered
// NodeCreated or NodeChanged, and a node created and deleted again before
// its NodeCreated was delivered is dropped with its deletion. So the
// queue holds at most one event per node the cache holds plus one per
// node the reader holds (a deletion), plus the connection events; a slow
// reader may miss intermediate values, never the last one.
//
// What it costs the server: where the Session has its wire layer and the
// server is ZooKeeper 3.6 or later, one persistent recursive watch on the
// root (a PersistentWatch), set before the tree is read and removed by
// Close; the tree is loaded with one getData per node and one
// getChildren per node that has children, and a change costs only the
// reads it needs: a node created or changed one getData, a node deleted
// none; the reads a burst of changes needs are sent together. Elsewhere
// (WithWireLayer(false), a Session made by NewSession, an older server)
// the cache falls back to one-shot watches: a data and a children watch
// per node, set again as they fire; a change costs a getData, a listing of
// the parent, or both; and the watches set last stay on the server after
// Close, until their node changes or the session ends (go-zookeeper cannot
// remove them). In both modes the whole tree is read again after every
// reconnection, and no goroutine runs per node.
//
// Beside other watchers of its Session on its root (a NodeCache of the
// root, a PersistentWatch, WatchData, WatchChildren), in any order of
// Start and Close, the cache and they each stay current. Before ZooKeeper
// 3.9 they share one server watch (see PersistentWatch): while the cache
// runs, a node watch on its root receives the whole subtree's
// notifications; the cache's Close leaves the watch to the others; and a
// one-shot watch set on the root may cost the cache a read of the whole
// tree, as after a reconnection.
//
// On a Session made by NewSession, go-zookeeper hands notifications over
// a channel that drops them when a burst outgrows its buffer; the cache
// may then miss changes until the next reconnection. Use Connect.
//
// NewTreeCache does no I/O. A TreeCache is safe for concurrent use; it
// runs from Start until Close, the Session's Close, or a read error that
// cannot pass (see Err). No goroutine of it is left after Close returns,
// but for the removal of its watch while cut off (see Close).
type TreeCache struct {
	s    *Session
	path string
	abs  string
	cfg  treeConfig
	err  error

	cacheRun               // Start, Close, Events, Err (cacherun.go)
	wake     chan struct{} // the dispatcher has events to deliver
	noted    chan struct{} // notifications wait in queue

	nmu   sync.Mutex
	queue []zk.Event // notifications not yet handled (one-shot watches)

	persistent atomic.Bool // the cache runs on a persistent recursive watch, not on one-shot watches

	mu      sync.Mutex
	loaded  bool
	nodes   map[string]*treeNode // by path as the cache reports it
	armedIn int64                // the session the nodes' armed bits hold for (0: none)
	pend    eventQueue
	backlog backlogMark // the backlog last reported (observe.go)
}

// treeNode is one cached node. Its children's names are slices of their
// paths (the map's keys), in no particular order. They sit behind a
// pointer, nil for a leaf: most cached nodes are leaves, and a node
// without the slice header fits the allocator's 112-byte size class
// instead of the 128-byte one (TestTreeNodeFitsIn112Bytes).
type treeNode struct {
	data  []byte
	stat  zk.Stat
	kids  *[]string
	armed watchBits // the watches this node has on the server, as far as the cache knows
}

// children returns the names of the node's children.
func (n *treeNode) children() []string {
	if n.kids == nil {
		return nil
	}
	return *n.kids
}

// setChildren makes kids the names of the node's children.
func (n *treeNode) setChildren(kids []string) {
	switch {
	case len(kids) == 0:
		n.kids = nil
	case n.kids == nil:
		n.kids = &kids
	default:
		*n.kids = kids
	}
}

// watchBits says which of a node's watches are set: armData, armKids.
type watchBits uint8

const (
	armData watchBits = 1 << iota
	armKids
)

// TreeCacheOption configures NewTreeCache (and NewNodeCache, which takes
// WithCacheCompression and WithName). WithName is one too.
type TreeCacheOption interface{ applyCache(*treeConfig) }

// cacheOpt is a TreeCacheOption that only the caches take.
type cacheOpt func(*treeConfig)

func (o cacheOpt) applyCache(c *treeConfig) { o(c) }

type treeConfig struct {
	maxDepth int                    // < 0: no limit
	keep     func(path string) bool // nil: every node
	err      error
	kind     string // what it reports to the Session's Observer (cacheobserve.go)
	name     string
	compress *bool // WithCacheCompression (nil: the Session's)
}

// WithMaxDepth caches only the nodes at most depth levels below the
// cache's root: 0 caches the root alone, 1 the root and its children.
// Nodes at the limit are not listed, so a change to their children is not
// reported. Default: no limit.
func WithMaxDepth(depth int) TreeCacheOption {
	return cacheOpt(func(c *treeConfig) {
		if depth < 0 && c.err == nil {
			c.err = invalidArg("max depth %d must not be negative", depth)
		}
		c.maxDepth = depth
	})
}

// WithPathFilter caches only the nodes below the root for which keep
// returns true, given their path (as the cache reports it); a node left
// out is not read, nor are its descendants. keep runs on the cache's
// goroutine and must not block. Default: every node.
func WithPathFilter(keep func(path string) bool) TreeCacheOption {
	return cacheOpt(func(c *treeConfig) {
		if keep == nil && c.err == nil {
			c.err = invalidArg("nil path filter")
		}
		c.keep = keep
	})
}

// NewTreeCache returns a cache of the node at path (relative to the
// Session's namespace) and its descendants; the node need not exist. It
// does no I/O; an invalid path, option or a nil session is reported by
// Start.
func NewTreeCache(s *Session, path string, opts ...TreeCacheOption) *TreeCache {
	c := &TreeCache{s: s, path: path, err: checkRecipe(s, path), cfg: treeConfig{maxDepth: -1, kind: KindTreeCache},
		cacheRun: newCacheRun(), wake: make(chan struct{}, 1), noted: make(chan struct{}, 1),
		nodes: map[string]*treeNode{}}
	for _, o := range opts {
		if o == nil {
			c.err = firstErr(c.err, invalidArg("nil TreeCacheOption"))
			continue
		}
		o.applyCache(&c.cfg)
	}
	c.err = firstErr(c.err, c.cfg.err)
	if c.err == nil {
		c.abs = s.abs(path)
	}
	return c
}

// Path returns the cached tree's root, as given to NewTreeCache.
func (c *TreeCache) Path() string { return c.path }

// Start loads the tree, then keeps the copy up to date in the background
// until Close. It returns once the tree is loaded (nil), or fails with
// ctx's error, ErrClosed (after the Session's Close, or after or during
// the cache's Close, then also matching ErrCacheStarted), ErrCacheStarted
// when called twice, ErrInvalidPath, ErrInvalidArgument or
// ErrNilSession, the Session's error at once when it is lost for good, or
// a read's error; after a failure the cache is closed.
func (c *TreeCache) Start(ctx context.Context) error {
	if c.err != nil {
		return c.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	run, err := c.claim(c.s)
	if err != nil {
		return err
	}
	// States are taken before the first read, so that no change after it
	// goes unnoticed; the watch (persistent, or the notification route
	// of the one-shot watches) is set by run, before its first read.
	states, unsub := c.s.subscribe()
	return c.launch(ctx, run, c.s, func(ctx context.Context) { c.run(ctx, states) }, c.dispatch, unsub)
}

// Get returns the node at path (as given to the cache, or below it) as
// last read, and whether the cache holds it. It returns false before Start
// has loaded the tree.
func (c *TreeCache) Get(path string) (CachedNode, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[path]
	if n == nil {
		return CachedNode{}, false
	}
	return *n.cached(path), true
}

// Children returns the sorted names of the cached children of the node at
// path, and whether the cache holds that node. A node at the depth limit
// (WithMaxDepth) has no cached children, nor do the children WithPathFilter
// leaves out appear.
func (c *TreeCache) Children(path string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[path]
	if n == nil {
		return nil, false
	}
	kids := slices.Clone(n.children())
	slices.Sort(kids)
	return kids, true
}

// Snapshot returns a copy of every cached node, by path. It is the
// caller's; the nodes' Data is shared with the cache: do not modify it.
func (c *TreeCache) Snapshot() map[string]CachedNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]CachedNode, len(c.nodes))
	for p, n := range c.nodes {
		m[p] = *n.cached(p)
	}
	return m
}

// Len returns the number of cached nodes.
func (c *TreeCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.nodes)
}

// Events returns the channel the cache's events arrive on (see TreeCache
// for their order and coalescing). It is closed when the cache stops.
func (c *TreeCache) Events() <-chan CacheEvent { return c.events }

// Err returns nil while the cache runs or after its Close, and why it
// stopped on its own otherwise: ErrClosed after the Session's Close, the
// Session's error once it is lost for good (as Session.Err reports it), or a
// read's error (such as one matching zk.ErrNoAuth).
func (c *TreeCache) Err() error { return c.stopped() }

// Close stops the cache and waits within ctx for its goroutines (and the
// removal of its watch); the Events channel is closed. It returns nil once
// they have ended, or ErrReleaseDeferred (wrapping ctx's error, naming
// the path) when ctx ends first: they then end on their own. Get, Children and Snapshot keep returning
// the last copy. Close is idempotent and safe to call concurrently. On a
// persistent watch it removes the watch from the
// server, waiting at most half a second for the server to confirm it; a
// removal not confirmed by then (the connection is cut off) goes on in the
// Session's background, which the Session's Close waits for, until the
// Session declares the connection lost, which takes the watch with it.
// Once the removal is confirmed, the Session holds on the server the
// watches it held before Start, on ZooKeeper 3.6 to 3.8 too, where the
// removal takes every watch of the Session on the root and sets its own
// one-shot watches there again (docs/design-caches.md). On one-shot
// watches Close does no I/O (see TreeCache). A read the cache
// sent before may still be answered afterwards (a request cannot be called
// back), but no reply makes it send another.
func (c *TreeCache) Close(ctx context.Context) error {
	return c.closeWithin(ctx, c.path)
}

func (n *treeNode) cached(path string) *CachedNode {
	return &CachedNode{Path: path, Data: n.data, Stat: *newNodeStat(&n.stat)}
}

// emit queues a node event (c.mu held).
func (c *TreeCache) emit(kind CacheEventKind, path string, n *treeNode) {
	c.pend.pushNode(kind, n.cached(path))
	c.noteBacklog() // cacheobserve.go
	c.signal()
}

func (c *TreeCache) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// dispatch delivers the queued events until ctx ends, then closes the
// Events channel.
func (c *TreeCache) dispatch(ctx context.Context) {
	defer close(c.events)
	for {
		c.mu.Lock()
		ev, ok := c.pend.pop()
		c.noteBacklog() // cacheobserve.go
		c.mu.Unlock()
		if !ok {
			select {
			case <-c.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case c.events <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// eventQueue holds the events not yet delivered, merging a node's events
// as TreeCache's doc says. Positions are absolute: base counts the events
// dropped from the front of items.
type eventQueue struct {
	items []queuedEvent
	head  int            // items[:head] are delivered
	base  int            // absolute position of items[0]
	last  map[string]int // path -> position of its last undelivered node event
}

type queuedEvent struct {
	CacheEvent
	dead bool // merged away
}

func (q *eventQueue) push(ev CacheEvent) {
	q.items = append(q.items, queuedEvent{CacheEvent: ev})
}

// pushNode queues a node event, merged with the node's last undelivered
// one where that keeps the replay exact: a change into a creation or a
// change; a deletion cancels a creation, and replaces a change (at the
// end, after the deletions of the node's children).
func (q *eventQueue) pushNode(kind CacheEventKind, n *CachedNode) {
	if q.last == nil {
		q.last = map[string]int{}
	}
	if i, ok := q.last[n.Path]; ok {
		l := &q.items[i-q.base]
		switch {
		case kind == NodeChanged && (l.Kind == NodeCreated || l.Kind == NodeChanged):
			l.Node = n
			return
		case kind == NodeDeleted && l.Kind == NodeCreated:
			l.dead, l.Node = true, nil
			delete(q.last, n.Path)
			return
		case kind == NodeDeleted && l.Kind == NodeChanged:
			l.dead, l.Node = true, nil
		}
	}
	q.push(CacheEvent{Kind: kind, Node: n})
	q.last[n.Path] = q.base + len(q.items) - 1
}

// pop returns the next event to deliver.
func (q *eventQueue) pop() (CacheEvent, bool) {
	for q.head < len(q.items) {
		it := q.items[q.head]
		q.items[q.head] = queuedEvent{}
		pos := q.base + q.head
		q.head++
		switch {
		case q.head == len(q.items): // all delivered: free the backing array
			q.base += q.head
			q.items, q.head = nil, 0
		case q.head > 64 && q.head*2 > len(q.items): // drop the delivered front
			q.items = slices.Delete(q.items, 0, q.head)
			q.base += q.head
			q.head = 0
		}
		if it.dead {
			continue
		}
		if it.Node != nil {
			if p, ok := q.last[it.Node.Path]; ok && p == pos {
				delete(q.last, it.Node.Path)
				if len(q.last) == 0 {
					q.last = nil // a map never shrinks: let a large one go
				}
			}
		}
		return it.CacheEvent, true
	}
	return CacheEvent{}, false
}
