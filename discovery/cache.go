package discovery

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	zr "github.com/zkrecipes/zkrecipes"
)

// ServiceCache keeps the current instances of one service, as Curator's
// ServiceCache: it watches the service's node and the instances' nodes,
// and reads again what changes, and everything after every reconnection
// and session expiry. A node that does not hold an instance is left out.
//
// Instances reads the local copy, with a channel closed when it changes. The copy
// may be stale while the connection is down, and converges once it is
// back. It runs on a zkrecipes.TreeCache of the service's node and its
// children: no goroutine per instance; on ZooKeeper 3.6 or later it costs
// the server one persistent recursive watch (see zkrecipes.TreeCache for
// the fallback elsewhere). As for a TreeCache, use a Session made by
// zkrecipes.Connect (on one adopted with NewSession, a burst of changes
// can be missed until the next reconnection). NewCache does no I/O. A
// ServiceCache is safe for concurrent use; no goroutine of it is left
// after Close or the Session's Close.
type ServiceCache struct {
	d    *ServiceDiscovery
	name string
	dir  string

	snap atomic.Pointer[[]Instance] // sorted by ID, rebuilt on every change; never modified

	mu      sync.Mutex
	tc      *zr.TreeCache
	nodes   map[string]cachedNode // the nodes that hold an instance, by name
	changed chan struct{}
	started bool
	closed  bool
	err     error
	done    chan struct{} // closed once the cache has stopped, after a Start
}

// cachedNode is an instance and the data it was read from.
type cachedNode struct {
	data []byte
	inst Instance
}

// NewCache returns a ServiceCache of the named service.
func (d *ServiceDiscovery) NewCache(name string) *ServiceCache {
	return &ServiceCache{d: d, name: name, dir: d.servicePath(name), nodes: map[string]cachedNode{},
		changed: make(chan struct{}), done: make(chan struct{})}
}

// Start loads the service's instances, then keeps the copy up to date in
// the background until Close. It returns once they are loaded, or fails
// with ctx's error, ErrClosed when called twice, after (or during) Close,
// or after the Close of its ServiceDiscovery or its Session (then also
// matching zkrecipes.ErrClosed), ErrBadName, or the Session's errors;
// after a failure the cache is closed.
func (c *ServiceCache) Start(ctx context.Context) error {
	if err := c.d.checkOpen(c.name, "\x00"); err != nil {
		return err
	}
	if ctx == nil {
		return errNilCtx
	}
	c.mu.Lock()
	if c.started || c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.started = true
	tc := zr.NewTreeCache(c.d.s, c.dir, zr.WithMaxDepth(1), cacheKind(),
		zr.WithCacheCompression(false)) // the data is decompressed by unmarshal, plain JSON too
	c.tc = tc
	c.mu.Unlock()
	err := tc.Start(ctx)
	if err == nil {
		err = c.load(ctx, tc)
	}
	if err != nil {
		c.mu.Lock()
		closedMeanwhile := c.closed
		c.closed = true
		c.mu.Unlock()
		_ = tc.Close(ctx)
		close(c.done)
		if closedMeanwhile {
			return ErrClosed // Close came during Start
		}
		return c.d.closing(err)
	}
	go c.follow(tc)
	return nil
}

// load takes the events of the initial load, up to CacheInitialized.
func (c *ServiceCache) load(ctx context.Context, tc *zr.TreeCache) error {
	for {
		select {
		case ev, ok := <-tc.Events():
			if !ok {
				return ErrClosed
			}
			c.mu.Lock()
			c.apply(ev)
			if ev.Kind == zr.CacheInitialized {
				c.publishLocked()
			}
			c.mu.Unlock()
			if ev.Kind == zr.CacheInitialized {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// follow applies the tree's events until it stops, publishing a new copy
// once the events that have arrived are applied.
func (c *ServiceCache) follow(tc *zr.TreeCache) {
	defer close(c.done)
	for ev := range tc.Events() {
		c.mu.Lock()
		changed := c.apply(ev)
	drain:
		for {
			select {
			case ev, ok := <-tc.Events():
				if !ok {
					break drain
				}
				changed = c.apply(ev) || changed
			default:
				break drain
			}
		}
		if changed {
			c.publishLocked()
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	if !c.closed {
		c.err = tc.Err()
	}
	c.mu.Unlock()
}

// apply takes one event of the tree (c.mu held) and reports whether an
// instance changed.
func (c *ServiceCache) apply(ev zr.CacheEvent) bool {
	if ev.Node == nil {
		return false
	}
	name, ok := strings.CutPrefix(ev.Node.Path, c.dir+"/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return false // the service's node itself
	}
	old, had := c.nodes[name]
	if ev.Kind == zr.NodeCreated || ev.Kind == zr.NodeChanged {
		if had && bytes.Equal(old.data, ev.Node.Data) {
			return false
		}
		if inst, err := c.d.unmarshal(ev.Node.Data); err == nil {
			c.nodes[name] = cachedNode{data: ev.Node.Data, inst: inst}
			return true
		}
	}
	delete(c.nodes, name) // deleted, or no instance
	return had
}

// publishLocked makes the instances the cache holds what Instances
// returns, and closes the channel Instances returned (c.mu held).
func (c *ServiceCache) publishLocked() {
	out := make([]Instance, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n.inst)
	}
	sortInstances(out)
	if o := instancesObserver(c.d.s); o != nil { // observe.go
		o.InstancesSeen(InstancesEvent{Recipe: recipeInfo(c.d.s, c.dir), Service: c.name, Instances: len(out)})
	}
	c.snap.Store(&out)
	close(c.changed)
	c.changed = make(chan struct{})
}

// Instances returns the service's instances as last read, sorted by ID,
// and a channel that is closed at their next change: read Instances again
// then. The slice is the caller's.
func (c *ServiceCache) Instances() ([]Instance, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.snapshot()), c.changed
}

// snapshot returns the current instances, shared: never modify them.
func (c *ServiceCache) snapshot() []Instance {
	if p := c.snap.Load(); p != nil {
		return *p
	}
	return nil
}

// Changed returns a channel that is closed at the next change of
// Instances.
//
// Deprecated: use Instances, which returns the instances and that channel
// together (one read, no change missed between the two).
func (c *ServiceCache) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Err returns nil while the cache runs or after its Close, and why it
// stopped on its own otherwise (zkrecipes.ErrClosed after the Session's
// Close, or a read error such as one matching zk.ErrNoAuth).
func (c *ServiceCache) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close stops the cache and waits within ctx for its goroutines
// (zkrecipes.ErrReleaseDeferred, wrapping ctx's error, when ctx ends
// first; they then end on their own). Instances keeps returning the last copy. Close is idempotent and
// safe to call concurrently. It removes the cache's watch from the server
// as zkrecipes.TreeCache's Close does (and, like it, leaves the last
// one-shot watches there where the cache falls back to them).
func (c *ServiceCache) Close(ctx context.Context) error {
	if ctx == nil {
		return errNilCtx
	}
	c.mu.Lock()
	c.closed = true
	started, tc := c.started, c.tc
	c.mu.Unlock()
	if !started {
		return nil
	}
	if err := tc.Close(ctx); err != nil {
		return err
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: discovery: cache of %s: %w", zr.ErrReleaseDeferred, c.name, ctx.Err())
	}
}
