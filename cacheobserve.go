package zkrecipes

// What the caches report to the Session's Observer: their loads and
// resyncs (CacheSynced) and their backlog (CacheBacklog).

// WithCacheName is WithName for a cache.
//
// Deprecated: use WithName, which every named recipe takes.
func WithCacheName(name string) TreeCacheOption { return WithName(name) }

// withCacheKind sets the kind a TreeCache reports to the Session's
// Observer (RecipeInfo.Kind), for a recipe built on a TreeCache:
// GroupMember's view reports KindGroupMember, package discovery's
// ServiceCache KindDiscovery (through internal/hooks). An empty kind is
// refused (ErrInvalidArgument, from Start). Default: KindTreeCache.
func withCacheKind(kind string) TreeCacheOption {
	return cacheOpt(func(c *treeConfig) {
		if kind == "" && c.err == nil {
			c.err = invalidArg("empty cache kind")
		}
		c.kind = kind
	})
}

// len is the number of events not yet delivered.
func (q *eventQueue) len() int { return len(q.items) - q.head }

// noteBacklog reports the cache's backlog when it crossed a threshold
// (c.mu held). Without an Observer it costs a nil check.
func (c *TreeCache) noteBacklog() {
	c.s.noteBacklog(&c.backlog, c.cfg.kind, c.cfg.name, c.path, c.pend.len())
}

// noteBacklog is TreeCache.noteBacklog for a NodeCache (c.mu held).
func (c *NodeCache) noteBacklog() {
	c.s.noteBacklog(&c.backlog, KindNodeCache, c.name, c.path, len(c.pend))
}

// cacheSyncs tells a NodeCache's read that follows a load or a resync
// from one that follows a change: it is reported as a sync.
type cacheSyncs struct {
	synced bool // the first load is reported
	resync bool // the next read follows a reconnection or a watch reset
}

// reportRead reports a NodeCache's successful read when it was a load or a
// resync. It runs on the cache's goroutine, before the read is queued.
func (c *NodeCache) reportRead(cs *cacheSyncs, n nodeData) {
	if c.s.cfg.obs == nil || (cs.synced && !cs.resync) {
		cs.synced, cs.resync = true, false
		return
	}
	nodes := 0
	if n.stat != nil {
		nodes = 1
	}
	c.mu.Lock()
	backlog := len(c.pend)
	c.mu.Unlock()
	c.s.reportCacheSync(KindNodeCache, c.name, c.path, !cs.synced, nodes, backlog)
	cs.synced, cs.resync = true, false
}
