package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// NodeCache keeps a local copy of one node's data and Stat, like Curator's
// NodeCache: it reads the node, watches it, and reads it again after
// every change, reconnection and session expiry.
//
// Get reads the local copy. Events delivers what changed, in order: first
// CacheInitialized with the node as Start loaded it, then NodeCreated,
// NodeChanged and NodeDeleted as the node changes, and CacheSuspended,
// CacheReconnected and CacheLost as the Session's connection does
// (between CacheSuspended and CacheReconnected the copy may be stale).
// Replaying the node events on the CacheInitialized node gives what Get
// returns once the events are drained.
//
// Back-pressure: the cache never waits for its reader, and never blocks
// the Session. While events are not received, node changes are coalesced
// into one step from the last node delivered to the current one (a node
// deleted and created again in that time is delivered as NodeDeleted, then
// NodeCreated with the new Czxid); connection events are queued without
// bound, as Subscribe queues them. So a slow reader may miss intermediate
// values, never the last one, and the stats it sees never go back (each
// node event has a larger Mzxid than the one before, or is a deletion).
//
// What it costs the server: one persistent watch on the node (a
// PersistentWatch), set before the first read and removed by Close, and
// one getData per change, where the Session has its wire layer and the
// server is ZooKeeper 3.6 or later; elsewhere a one-shot watch set again
// after every change (an exists watch while the node does not exist).
//
// Beside other watchers of its Session on its node (a TreeCache rooted
// there, a PersistentWatch, WatchData, WatchChildren), in any order of
// Start and Close, the cache and they each stay current. Before ZooKeeper
// 3.9 they share one server watch (see PersistentWatch): beside a
// recursive one, the Session receives the subtree's notifications, which
// the cache ignores; the cache's Close leaves the watch to the others; and
// a one-shot watch set on the node may cost the cache a getData.
//
// NewNodeCache does no I/O. A NodeCache is safe for concurrent use; it
// runs from Start until Close, the Session's Close, or a read error that
// cannot pass (see Err). No goroutine of it is left after Close returns,
// but for the removal of its watch while cut off (see Close).
type NodeCache struct {
	s    *Session
	path string
	abs  string
	err  error

	cacheRun               // Start, Close, Events, Err (cacherun.go)
	wake     chan struct{} // the dispatcher has items to deliver

	mu       sync.Mutex
	cur      *nodeData // last read; nil before the first
	pend     []cacheItem
	backlog  backlogMark // the backlog last reported (observe.go)
	compress bool        // WithCacheCompression, else the Session's WithCompression
	name     string      // WithName: what it reports to the Session's Observer
}

// CachedNode is a node as a cache holds it. Data is shared with the
// cache and every event: do not modify it.
type CachedNode struct {
	Path string // as given to the cache
	Data []byte
	Stat NodeStat
}

// CacheEventKind says what a CacheEvent reports.
type CacheEventKind int

const (
	// CacheInitialized: the first event, with the node as Start loaded
	// it (Node nil if it did not exist).
	CacheInitialized CacheEventKind = iota + 1
	// NodeCreated: the node exists again, or a new node replaced it
	// (a new Czxid).
	NodeCreated
	// NodeChanged: the node's data changed.
	NodeChanged
	// NodeDeleted: the node is gone; Node is as last seen.
	NodeDeleted
	// CacheSuspended: the connection is lost; the copy may be stale.
	CacheSuspended
	// CacheReconnected: the connection is back and the node is read again.
	CacheReconnected
	// CacheLost: the ZooKeeper session is lost; the cache goes on under the
	// next one.
	CacheLost
)

func (k CacheEventKind) String() string {
	switch k {
	case CacheInitialized:
		return "INITIALIZED"
	case NodeCreated:
		return "NODE_CREATED"
	case NodeChanged:
		return "NODE_CHANGED"
	case NodeDeleted:
		return "NODE_DELETED"
	case CacheSuspended:
		return "SUSPENDED"
	case CacheReconnected:
		return "RECONNECTED"
	case CacheLost:
		return "LOST"
	}
	return fmt.Sprintf("CacheEventKind(%d)", int(k))
}

// CacheEvent is one change a cache reports.
type CacheEvent struct {
	Kind  CacheEventKind
	Node  *CachedNode // node events and CacheInitialized (nil: no node)
	State StateChange // connection events
}

// cacheItem is an event not yet delivered: a connection state, or a node
// state the dispatcher turns into events against the last one delivered.
type cacheItem struct {
	state *StateChange
	node  *nodeData
	init  bool
}

// NewNodeCache returns a cache of the node at path (relative to the
// Session's namespace), which need not exist. It takes two of the cache
// options, WithCacheCompression and WithName; the others (WithMaxDepth...)
// are refused. It does no I/O; an invalid path or option, or a nil session
// is reported by Start.
func NewNodeCache(s *Session, path string, opts ...TreeCacheOption) *NodeCache {
	c := &NodeCache{s: s, path: path, err: checkWatched(s, path),
		cacheRun: newCacheRun(), wake: make(chan struct{}, 1)}
	c.compress, c.name, c.err = nodeCacheOptions(s, c.err, opts)
	if c.err == nil {
		c.abs = s.abs(path)
	}
	return c
}

// Path returns the cached node's path, as given to NewNodeCache.
func (c *NodeCache) Path() string { return c.path }

// Start loads the node, then keeps the copy up to date in the background
// until Close. It returns once the node is loaded (nil), or fails with
// ctx's error, ErrClosed (after the Session's Close, or after or during
// the cache's Close, then also matching ErrCacheStarted), ErrCacheStarted
// when called twice, ErrInvalidPath or ErrNilSession, the Session's error
// at once when it is lost for good, or the read's error; after a failure
// the cache is closed.
func (c *NodeCache) Start(ctx context.Context) error {
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
	return c.launch(ctx, run, c.s, c.run, c.dispatch, nil)
}

// run keeps the copy up to date until ctx ends or a read fails for
// good: on one persistent watch where the Session and the server can set
// one (nodecache_persistent.go), else on one-shot watches.
func (c *NodeCache) run(ctx context.Context) {
	states, unsub := c.s.subscribe()
	w, err := openCacheWatch(ctx, c.s, c.path, false)
	if err == nil {
		err = c.followPersistent(ctx, w, states)
		c.s.closeCacheWatch(w)
	}
	unsub()
	if errors.Is(err, ErrPersistentWatchUnsupported) {
		var cs cacheSyncs // reported as Observer.CacheSynced (cacheobserve.go)
		err = follow(ctx, c.s, func(ctx context.Context) (nodeData, <-chan zk.Event, error) {
			n, w, err := c.s.readData(ctx, c.abs)
			if err == nil {
				c.reportRead(&cs, n)
			}
			return n, w, err
		}, newerData, func(sc StateChange) {
			cs.resync = cs.resync || sc.State == StateReconnected
			c.onState(sc)
		}, c.onNode)
	}
	c.end(c.s, err)
}

// Get returns the node as last read, and whether it exists. It returns
// false before Start has loaded the node.
func (c *NodeCache) Get() (CachedNode, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || c.cur.stat == nil {
		return CachedNode{}, false
	}
	return *c.cached(*c.cur), true
}

// Events returns the channel the cache's events arrive on (see NodeCache
// for their order and coalescing). It is closed when the cache stops.
func (c *NodeCache) Events() <-chan CacheEvent { return c.events }

// Err returns nil while the cache runs or after its Close, and why it
// stopped on its own otherwise: ErrClosed after the Session's Close, the
// Session's error once it is lost for good (as Session.Err reports it), or
// the read's error (such as one matching zk.ErrNoAuth).
func (c *NodeCache) Err() error { return c.stopped() }

// Close stops the cache and waits within ctx for its goroutines (and the
// removal of its watch); the Events channel is closed. It returns nil once
// they have ended, or ErrReleaseDeferred (wrapping ctx's error, naming
// the path) when ctx ends first: they then end on their own. Get keeps returning the last copy. Close
// is idempotent and safe to call concurrently. On a persistent watch it
// removes the watch from the server as TreeCache's Close does (waiting at
// most half a second; a removal not confirmed then goes on in the
// Session's background). On one-shot watches it does no
// I/O, and the cache's last watch stays on the server until the node
// changes (or, for a node that does not exist, is created) or the
// ZooKeeper session ends: go-zookeeper cannot remove it; its notification
// is then dropped by the client.
func (c *NodeCache) Close(ctx context.Context) error {
	return c.closeWithin(ctx, c.path)
}

// onNode takes a read newer than the last: it becomes the copy, and an
// item to deliver, merged into the last item when that is a node state
// not delivered yet.
func (c *NodeCache) onNode(n nodeData) error {
	if n.stat != nil {
		n.data = decodedCacheData(c.s, c.compress, c.path, n.data)
	}
	c.mu.Lock()
	first := c.cur == nil
	c.cur = &n
	switch k := len(c.pend); {
	case first:
		c.pend = append(c.pend, cacheItem{node: &n, init: true})
		close(c.ready)
	case k > 0 && c.pend[k-1].node != nil && !c.pend[k-1].init:
		c.pend[k-1].node = &n
	default:
		c.pend = append(c.pend, cacheItem{node: &n})
	}
	c.noteBacklog() // cacheobserve.go
	c.mu.Unlock()
	c.signal()
	return nil
}

// onState queues the connection states a reader of the cache cares about.
func (c *NodeCache) onState(sc StateChange) {
	switch sc.State {
	case StateSuspended, StateReconnected, StateLost:
	default:
		return
	}
	c.mu.Lock()
	if c.cur != nil { // before the load, Start's caller learns of it by waiting
		c.pend = append(c.pend, cacheItem{state: &sc})
		c.noteBacklog() // cacheobserve.go
	}
	c.mu.Unlock()
	c.signal()
}

func (c *NodeCache) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// dispatch delivers the queued items as events until ctx ends, then
// closes the Events channel.
func (c *NodeCache) dispatch(ctx context.Context) {
	defer close(c.events)
	var last nodeData // the node as last delivered
	for {
		c.mu.Lock()
		var it cacheItem
		ok := len(c.pend) > 0
		if ok {
			it = c.pend[0]
			c.pend[0] = cacheItem{}
			c.pend = c.pend[1:]
			c.noteBacklog() // cacheobserve.go
		}
		c.mu.Unlock()
		if !ok {
			select {
			case <-c.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		for _, ev := range c.toEvents(it, &last) {
			select {
			case c.events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}
}

// toEvents turns an item into the events it stands for, given the node as
// last delivered (which it updates).
func (c *NodeCache) toEvents(it cacheItem, last *nodeData) []CacheEvent {
	if it.state != nil {
		kind := map[ConnState]CacheEventKind{StateSuspended: CacheSuspended, StateReconnected: CacheReconnected, StateLost: CacheLost}[it.state.State]
		return []CacheEvent{{Kind: kind, State: *it.state}}
	}
	cur, prev := *it.node, *last
	*last = cur
	switch {
	case it.init:
		ev := CacheEvent{Kind: CacheInitialized}
		if cur.stat != nil {
			ev.Node = c.cached(cur)
		}
		return []CacheEvent{ev}
	case prev.stat == nil && cur.stat == nil:
		return nil
	case prev.stat == nil:
		return []CacheEvent{{Kind: NodeCreated, Node: c.cached(cur)}}
	case cur.stat == nil:
		return []CacheEvent{{Kind: NodeDeleted, Node: c.cached(prev)}}
	case cur.stat.Czxid != prev.stat.Czxid:
		return []CacheEvent{{Kind: NodeDeleted, Node: c.cached(prev)}, {Kind: NodeCreated, Node: c.cached(cur)}}
	case cur.stat.Mzxid != prev.stat.Mzxid:
		return []CacheEvent{{Kind: NodeChanged, Node: c.cached(cur)}}
	}
	return nil
}

func (c *NodeCache) cached(n nodeData) *CachedNode {
	return &CachedNode{Path: c.path, Data: n.data, Stat: *newNodeStat(n.stat)}
}
