package discovery

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	zr "github.com/zkrecipes/zkrecipes"
)

// ServiceCache keeps the current instances of one service, as Curator's
// ServiceCache: it watches the service's node and each instance's node,
// and reads them again after every change, reconnection and session
// expiry. A node that does not hold an instance is left out.
//
// Instances reads the local copy; Changed tells when it changes. The copy
// may be stale while the connection is down, and converges once it is
// back. NewCache does no I/O. A ServiceCache is safe for concurrent use;
// no goroutine of it is left after Close or the Session's Close.
type ServiceCache struct {
	d    *ServiceDiscovery
	name string
	dir  string

	snap atomic.Pointer[[]Instance] // sorted by ID, rebuilt on every change; never modified

	mu        sync.Mutex
	nodes     map[string]*cachedNode // by node name
	listed    bool                   // the first listing arrived
	changed   chan struct{}
	started   bool
	closed    bool
	cancel    context.CancelFunc
	err       error
	done      chan struct{}
	readyOnce sync.Once
	ready     chan struct{}
	wg        sync.WaitGroup
}

type cachedNode struct {
	cancel context.CancelFunc
	loaded bool      // its first read arrived
	inst   *Instance // nil: no node, or not an instance
}

// NewCache returns a ServiceCache of the named service.
func (d *ServiceDiscovery) NewCache(name string) *ServiceCache {
	return &ServiceCache{d: d, name: name, dir: d.servicePath(name), nodes: map[string]*cachedNode{},
		changed: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{})}
}

// Start loads the service's instances, then keeps the copy up to date in
// the background until Close. It returns once they are loaded, or fails
// with ctx's error, ErrClosed when called twice or after Close, ErrBadName,
// or the Session's errors; after a failure the cache is closed.
func (c *ServiceCache) Start(ctx context.Context) error {
	if err := c.d.check(c.name, "\x00"); err != nil {
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
	run, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.mu.Unlock()
	go func() {
		defer close(c.done)
		err := zr.WatchChildren(run, c.d.s, c.dir, func(kids []string, _ *zr.NodeStat) error {
			return c.onChildren(run, kids)
		})
		c.wg.Wait()
		c.mu.Lock()
		if !c.closed && !errors.Is(err, context.Canceled) {
			c.err = err
		}
		c.mu.Unlock()
	}()
	select {
	case <-c.ready:
		return nil
	case <-c.done:
		c.Close()
		if err := c.Err(); err != nil {
			return err
		}
		return ErrClosed
	case <-ctx.Done():
		c.Close()
		return ctx.Err()
	}
}

// Instances returns the service's instances as last read, sorted by ID.
func (c *ServiceCache) Instances() []Instance { return slices.Clone(c.snapshot()) }

// snapshot returns the current instances, shared: never modify them.
func (c *ServiceCache) snapshot() []Instance {
	if p := c.snap.Load(); p != nil {
		return *p
	}
	return nil
}

// Changed returns a channel that is closed at the next change of
// Instances.
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

// Close stops the cache and waits for its goroutines. Instances keeps
// returning the last copy. Close does no I/O and is idempotent. The
// cache's last watches stay on the server until their nodes change or
// the ZooKeeper session ends: go-zookeeper cannot remove a watch.
func (c *ServiceCache) Close() error {
	c.mu.Lock()
	c.closed = true
	started, cancel := c.started, c.cancel
	c.mu.Unlock()
	if started {
		cancel()
		<-c.done
	}
	return nil
}

// onChildren follows the listing: a watcher for every new node, and the
// watcher of every node gone stopped.
func (c *ServiceCache) onChildren(run context.Context, kids []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[string]bool, len(kids))
	for _, k := range kids {
		seen[k] = true
		if _, ok := c.nodes[k]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(run)
		n := &cachedNode{cancel: cancel}
		c.nodes[k] = n
		c.wg.Add(1)
		go c.watchNode(ctx, k, n)
	}
	changed := false
	for k, n := range c.nodes {
		if !seen[k] {
			n.cancel()
			delete(c.nodes, k)
			changed = changed || n.inst != nil
		}
	}
	c.listed = true
	if changed {
		c.notifyLocked()
	}
	c.checkReadyLocked()
	return nil
}

// watchNode follows one instance node until its context ends (the node
// left the listing, or the cache stops).
func (c *ServiceCache) watchNode(ctx context.Context, name string, n *cachedNode) {
	defer c.wg.Done()
	_ = zr.WatchData(ctx, c.d.s, c.dir+"/"+name, func(data []byte, st *zr.NodeStat) error {
		var inst *Instance
		if st != nil {
			if i, err := Unmarshal(data); err == nil {
				inst = &i
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.nodes[name] != n {
			return nil // replaced or dropped; its context is cancelled
		}
		if inst != nil || n.inst != nil {
			n.inst = inst
			c.notifyLocked()
		}
		n.loaded = true
		c.checkReadyLocked()
		return nil
	})
	n.cancel()
	c.mu.Lock()
	n.loaded = true // a watcher that stopped on an error holds nobody up
	c.checkReadyLocked()
	c.mu.Unlock()
}

func (c *ServiceCache) notifyLocked() {
	out := make([]Instance, 0, len(c.nodes))
	for _, n := range c.nodes {
		if n.inst != nil {
			out = append(out, *n.inst)
		}
	}
	sortInstances(out)
	c.snap.Store(&out)
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *ServiceCache) checkReadyLocked() {
	if !c.listed {
		return
	}
	for _, n := range c.nodes {
		if !n.loaded {
			return
		}
	}
	c.readyOnce.Do(func() { close(c.ready) })
}
