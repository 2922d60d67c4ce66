package zkrecipes

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// How a TreeCache keeps its copy on one persistent recursive watch
// (docs/design-caches.md), as Curator's CuratorCache does: the watch
// is set first, then the tree is loaded: every node's data read, and only
// the nodes whose Stat counts children listed, up to maxTreeReads reads at
// once, none with a watch. After that a change costs only the reads it
// needs, and no watch is set again: a node created or changed is read once
// (getData), a node deleted costs nothing. The notifications that arrive
// while earlier ones are read are taken together (the watch hands over
// all those waiting at once), and their reads sent at once. After every reconnection the watch is set again (a notification
// may have been lost with the connection) and the whole tree read again
// (resync in treecache_sync.go), so that the copy equals a fresh listing.
//
// Correctness rests on ZooKeeper's order: the notifications of one watch
// arrive in the order of the changes, before the reply of any read sent
// after them; so a read sent after a batch of notifications sees at least
// what they report, and a later change brings a later notification. One
// batch is read at a time, each path once, so a node's reads never go
// back in time. A node's children are created after it, so their
// notifications come after its own, and the batch is applied parents
// first: a node is always inserted under a parent the cache holds.

// maxBatch bounds the notifications a TreeCache takes in one batch, and
// maxBatchReads the reads of a batch in flight at once.
const (
	maxBatch      = 4096
	maxBatchReads = 256
)

// followPersistent loads the tree, then handles the watch's notes and
// connection changes until ctx ends or a read fails for good. The whole
// tree is read again after every note that events may have been missed
// (the watch was set again on a new connection), once connected.
func (c *TreeCache) followPersistent(ctx context.Context, w *PersistentWatch, states <-chan StateChange) error {
	resync := true     // the first load
	notes := w.batches // every event waiting, at once (openCacheWatch)
	for {
		if resync && c.s.State().connected() {
			drainNotes(notes) // the reads below cover what they report
			err := c.resync(ctx)
			switch {
			case err == nil:
				resync = false
			case !lostConnection(err):
				return err
			}
			// Lost the connection: the watch is set again on the next one,
			// which says so with a note; the tree is read again then.
		}
		select {
		case batch, ok := <-notes:
			if !ok {
				// The watch ends with the Session, or on a server that
				// predates it (after a reconnection): run falls back.
				return firstErr(w.Err(), ErrClosed)
			}
			if slices.ContainsFunc(batch, func(n WatchEvent) bool { return n.Kind == WatchReset }) {
				resync = true
				continue
			}
			if resync {
				continue // the coming resync covers them
			}
			if err := c.applyNotes(ctx, batch); err != nil {
				if !lostConnection(err) {
					return err
				}
				resync = true
			}
		case sc, ok := <-states:
			if !ok || sc.State == StateClosed {
				return ErrClosed
			}
			c.onState(sc)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// drainNotes drops the notes waiting on notes.
func drainNotes(notes <-chan []WatchEvent) {
	for {
		select {
		case _, ok := <-notes:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// applyNotes brings the copy up to date with what a batch of
// notifications reports: the deletions at once, in order, then one read
// of every node created or changed, sent together, applied parents first.
func (c *TreeCache) applyNotes(ctx context.Context, batch []WatchEvent) error {
	var reads []string
	at := map[string]int{}
	c.mu.Lock()
	for _, n := range batch {
		p := n.Path
		switch n.Kind {
		case WatchNodeDeleted:
			c.removeAttached(p)
			if i, ok := at[p]; ok {
				reads[i] = ""
				delete(at, p)
			}
		case WatchNodeCreated, WatchDataChanged:
			if _, ok := at[p]; !ok && c.inScope(p) {
				at[p] = len(reads)
				reads = append(reads, p)
			}
		}
	}
	c.mu.Unlock()
	reads = slices.DeleteFunc(reads, func(p string) bool { return p == "" })
	slices.SortStableFunc(reads, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	got, err := c.readAll(ctx, reads)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range reads {
		f := got[i]
		n := c.nodes[p]
		switch {
		case f.stat == nil: // deleted since: its notification follows
			c.removeAttached(p)
		case n == nil:
			c.insert(f) // under its parent, if the cache holds it
		case f.stat.Czxid != n.stat.Czxid:
			// Deleted and created again since: the notifications of both
			// follow, and the copy follows them.
		case f.stat.Mzxid > n.stat.Mzxid:
			n.data, n.stat = c.decoded(p, f.data), *f.stat
			c.emit(NodeChanged, p, n)
		default:
			n.stat = *f.stat
		}
	}
	return nil
}

// inScope tells whether the cache holds the node at p when it exists and
// its parent is held: the root, and the nodes below it within the depth
// limit that the path filter keeps.
func (c *TreeCache) inScope(p string) bool {
	if p == c.path {
		return true
	}
	if !strings.HasPrefix(p, c.path) || p == "/" {
		return false
	}
	return c.listed(parentPath(p)) && c.keep(p)
}

// readAll reads the data of the nodes at paths, without watches, up to
// maxBatchReads at a time, the first of them written together (see
// Session.gather); a node not found is returned with a nil stat.
func (c *TreeCache) readAll(ctx context.Context, paths []string) ([]loadedNode, error) {
	out := make([]loadedNode, len(paths))
	type result struct {
		i   int
		n   loadedNode
		err error
	}
	results := make(chan result, maxBatchReads) // room for every read in flight: none blocks after an early return
	c.s.gather(min(len(paths), maxBatchReads))
	for next, running := 0, 0; next < len(paths) || running > 0; {
		for ; next < len(paths) && running < maxBatchReads; next++ {
			if err := ctx.Err(); err != nil {
				return nil, err // closed: start no read
			}
			i, p := next, paths[next]
			if !c.s.spawn(func() {
				n, err := c.readData(ctx, p)
				results <- result{i, n, err}
			}) {
				return nil, ErrClosed
			}
			running++
		}
		select {
		case r := <-results:
			running--
			if r.err != nil {
				return nil, r.err
			}
			out[r.i] = r.n
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// readData reads the node at p without a watch; not found, it returns
// the node with a nil stat. Once ctx ends it sends nothing.
func (c *TreeCache) readData(ctx context.Context, p string) (loadedNode, error) {
	if err := ctx.Err(); err != nil {
		return loadedNode{}, err
	}
	abs := c.s.abs(p)
	g, err := traced(c.s, "getData", abs, c.s.getReq(abs, false))
	if errors.Is(err, zk.ErrNoNode) {
		return loadedNode{path: p}, nil
	}
	if err != nil {
		return loadedNode{}, c.s.opError("getData", abs, err)
	}
	return loadedNode{path: p, data: g.data, stat: g.stat}, nil
}
