package zkrecipes

import (
	"context"
	"errors"
	"sync"
)

// GroupMember is one member of a group, as Curator's GroupMember: it
// keeps an ephemeral node path/id holding the member's data (a
// PersistentNode: made again after a session expiry or a deletion), and
// follows the group's members and their data.
//
// Members reads the local view; Changed tells when it changes. The view
// may be stale while the connection is down and converges once it is
// back. NewGroupMember does no I/O. A GroupMember is safe for concurrent
// use; no goroutine of it is left after Close or the Session's Close.
type GroupMember struct {
	s    *Session
	path string
	id   string
	node *PersistentNode
	err  error

	mu        sync.Mutex
	members   map[string]*member
	listed    bool
	changed   chan struct{}
	started   bool
	closed    bool
	cancel    context.CancelFunc
	done      chan struct{}
	ready     chan struct{}
	readyOnce sync.Once
	stopErr   error
	wg        sync.WaitGroup
}

type member struct {
	cancel context.CancelFunc
	loaded bool
	data   []byte // nil with exists false
	exists bool
}

// NewGroupMember returns the member id of the group at path (relative to
// the Session's namespace), holding data. Bad arguments are reported by
// Start.
func NewGroupMember(s *Session, path, id string, data []byte) *GroupMember {
	g := &GroupMember{s: s, path: path, id: id, members: map[string]*member{},
		changed: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{})}
	g.err = checkRecipe(s, path)
	if g.err == nil && (id == "" || validatePath(path+"/"+id) != nil || baseName(path+"/"+id) != id) {
		g.err = invalidArg("member id %q is not a node name", id)
	}
	if g.err == nil {
		g.node = NewPersistentNode(s, joinPath(path, id), data)
	}
	return g
}

// Start joins the group (in the background: see WaitInPlace) and loads
// its members. It returns once they are loaded, or fails with ctx's
// error, ErrNodeStarted when called twice or after Close, ErrClosed after
// the Session's Close, ErrInvalidPath, ErrInvalidArgument or
// ErrNilSession; after a failure the member has left.
func (g *GroupMember) Start(ctx context.Context) error {
	if g.err != nil {
		return g.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	g.mu.Lock()
	if g.started || g.closed {
		g.mu.Unlock()
		return ErrNodeStarted
	}
	g.started = true
	run, cancel := ctxUntil(g.s.closedCh)
	g.cancel = cancel
	g.mu.Unlock()
	if err := g.node.Start(); err != nil {
		cancel()
		close(g.done)
		return err
	}
	if !g.s.spawn(func() { defer close(g.done); g.follow(run) }) {
		cancel()
		close(g.done)
		_ = g.node.Close(ctx)
		return ErrClosed
	}
	select {
	case <-g.ready:
		return nil
	case <-g.done:
		_ = g.Close(context.Background())
		if err := g.Err(); err != nil {
			return err
		}
		return ErrClosed
	case <-ctx.Done():
		_ = g.Close(context.Background())
		return ctx.Err()
	}
}

// WaitInPlace waits until this member's node is in place (see
// PersistentNode.WaitInPlace).
func (g *GroupMember) WaitInPlace(ctx context.Context) error {
	if g.err != nil {
		return g.err
	}
	return g.node.WaitInPlace(ctx)
}

// Status reports whether this member's node is in place (see
// PersistentNode.Status).
func (g *GroupMember) Status() (NodeStatus, <-chan struct{}) {
	if g.err != nil {
		return NodeStatus{Err: g.err}, make(chan struct{})
	}
	return g.node.Status()
}

// SetData sets this member's data (see PersistentNode.SetData).
func (g *GroupMember) SetData(ctx context.Context, data []byte) error {
	if g.err != nil {
		return g.err
	}
	return g.node.SetData(ctx, data)
}

// Members returns the group's members as last read, by id, with their
// data (this member's own included once its node is read back). The
// data is shared: do not modify it.
func (g *GroupMember) Members() map[string][]byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]byte, len(g.members))
	for id, m := range g.members {
		if m.exists {
			out[id] = m.data
		}
	}
	return out
}

// Changed returns a channel that is closed at the next change of
// Members.
func (g *GroupMember) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

// Err returns nil while the member runs or after its Close, and why the
// view stopped on its own otherwise (ErrClosed after the Session's Close,
// or a read error such as one matching zk.ErrNoAuth).
func (g *GroupMember) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopErr
}

// Close leaves the group: it stops the view, waits for its goroutines,
// and deletes this member's node (see PersistentNode.Close for what it
// returns). Members keeps returning the last view. Close is idempotent.
func (g *GroupMember) Close(ctx context.Context) error {
	if g.err != nil {
		return nil
	}
	g.mu.Lock()
	g.closed = true
	started, cancel := g.started, g.cancel
	g.mu.Unlock()
	if started {
		cancel()
		<-g.done
	}
	return g.node.Close(ctx)
}

// follow keeps the view: the listing of the group, and a data watcher
// for every member in it.
func (g *GroupMember) follow(ctx context.Context) {
	err := WatchChildren(ctx, g.s, g.path, func(kids []string, _ *NodeStat) error {
		g.onChildren(ctx, kids)
		return nil
	})
	g.wg.Wait()
	g.mu.Lock()
	if !g.closed && !errors.Is(err, context.Canceled) {
		g.stopErr = err
	}
	g.mu.Unlock()
}

func (g *GroupMember) onChildren(ctx context.Context, kids []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := make(map[string]bool, len(kids))
	for _, k := range kids {
		seen[k] = true
		if _, ok := g.members[k]; ok {
			continue
		}
		mctx, cancel := context.WithCancel(ctx)
		m := &member{cancel: cancel}
		g.members[k] = m
		g.wg.Add(1)
		go g.watchMember(mctx, k, m)
	}
	for k, m := range g.members {
		if !seen[k] {
			m.cancel()
			delete(g.members, k)
			if m.exists {
				g.notifyLocked()
			}
		}
	}
	g.listed = true
	g.checkReadyLocked()
}

// watchMember follows one member's node until its context ends.
func (g *GroupMember) watchMember(ctx context.Context, id string, m *member) {
	defer g.wg.Done()
	_ = WatchData(ctx, g.s, joinPath(g.path, id), func(data []byte, st *NodeStat) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.members[id] != m {
			return nil
		}
		m.data, m.exists, m.loaded = data, st != nil, true
		g.notifyLocked()
		g.checkReadyLocked()
		return nil
	})
	m.cancel()
	g.mu.Lock()
	m.loaded = true
	g.checkReadyLocked()
	g.mu.Unlock()
}

func (g *GroupMember) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *GroupMember) checkReadyLocked() {
	if !g.listed {
		return
	}
	for _, m := range g.members {
		if !m.loaded {
			return
		}
	}
	g.readyOnce.Do(func() { close(g.ready) })
}
