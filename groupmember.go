package zkrecipes

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
)

// GroupMember is one member of a group, as Curator's GroupMember: it
// keeps an ephemeral node path/id holding the member's data (a
// PersistentNode: made again after a session expiry or a deletion), and
// follows the group's members and their data.
//
// Members reads the local view, with a channel closed when it changes. The view
// may be stale while the connection is down and converges once it is
// back. The view runs on a TreeCache of the group's node and its
// children: no goroutine per member; on ZooKeeper 3.6 or later it costs
// the server one persistent recursive watch (see TreeCache for the
// fallback elsewhere). As for a TreeCache, use a Session made by Connect
// (on one adopted with NewSession, a burst of changes can be missed until
// the next reconnection). NewGroupMember does no I/O. A GroupMember is
// safe for concurrent use; no goroutine of it is left after Close or the
// Session's Close.
type GroupMember struct {
	s    *Session
	path string
	id   string
	node *PersistentNode
	cfg  groupMemberConfig
	err  error

	mu      sync.Mutex
	view    *TreeCache
	members map[string][]byte // by id
	changed chan struct{}
	started bool
	closed  bool
	done    chan struct{} // closed once the view has stopped, after a Start
	stopErr error
}

// GroupMemberOption configures NewGroupMember: WithName, the name the
// Session's Observer reports for the member's view of the group.
type GroupMemberOption interface{ applyGroupMember(*groupMemberConfig) }

type groupMemberConfig struct {
	name string // WithName (observe.go)
}

// NewGroupMember returns the member id of the group at path (relative to
// the Session's namespace), holding data. The group's path, the member's
// id and its data are positional: every member has them (options are what
// a recipe may go without). With nil data the member holds
// this host's address as text, as a Curator GroupMember made without a
// payload does (pass []byte{} for 0 bytes). Bad arguments, and data too
// large for the Session's request size limit (ErrDataTooLarge), are
// reported by Start.
func NewGroupMember(s *Session, path, id string, data []byte, opts ...GroupMemberOption) *GroupMember {
	g := &GroupMember{s: s, path: path, id: id, members: map[string][]byte{},
		changed: make(chan struct{}), done: make(chan struct{})}
	g.err = checkRecipe(s, path)
	for _, o := range opts {
		if o == nil {
			g.err = firstErr(g.err, invalidArg("nil GroupMemberOption"))
			continue
		}
		o.applyGroupMember(&g.cfg)
	}
	if g.err == nil && (id == "" || validatePath(path+"/"+id) != nil || baseName(path+"/"+id) != id) {
		g.err = invalidArg("member id %q is not a node name", id)
	}
	if g.err == nil {
		if data == nil {
			data = []byte(localAddress())
		}
		g.node = NewPersistentNode(s, joinPath(path, id), data)
		g.err = g.node.err
	}
	return g
}

// Start joins the group and loads its members, and waits within ctx
// until both are done: this member's node is first in place and the
// members are loaded. ctx bounds only that wait, never the member's life,
// which lasts until Close or the Session's Close. It fails with ctx's
// error (even while cut off from the server), ErrNodeStarted when called
// twice, ErrClosed (also matching ErrNodeStarted) after or during Close,
// ErrClosed after the Session's Close, ErrInvalidPath,
// ErrInvalidArgument, ErrNilSession or ErrDataTooLarge; and with
// ErrNotAuthorized (also matching zk.ErrNoAuth) or ErrInvalidACL when
// ZooKeeper refused the node for the Session's credentials or ACL, which
// no retry can mend. A refusal after Start (the group's ACL changed) is
// reported by Status, as PersistentNode's. A Start that fails has stopped
// what it began: the member leaves, its node, if made, is deleted in the
// background (a Close meanwhile waits for that delete within its own ctx,
// and returns nil).
func (g *GroupMember) Start(ctx context.Context) error {
	if g.err != nil {
		return g.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return &startAfterClose{once: ErrNodeStarted}
	}
	if g.started {
		g.mu.Unlock()
		return ErrNodeStarted
	}
	g.started = true
	view := NewTreeCache(g.s, g.path, WithMaxDepth(1), withCacheKind(KindGroupMember), WithCacheCompression(false), WithName(g.cfg.name))
	g.view = view
	g.mu.Unlock()
	err := g.node.launch()
	if err == nil {
		err = view.Start(ctx)
	}
	if err == nil {
		err = g.load(ctx, view)
	}
	if err == nil {
		err = g.node.WaitInPlace(ctx)
	}
	if err == nil && !g.s.spawn(func() { g.follow(view) }) {
		err = ErrClosed
	}
	if err != nil {
		g.mu.Lock()
		if g.closed && !g.s.isClosed() { // Close came during Start
			err = &startAfterClose{once: ErrNodeStarted}
		}
		g.closed = true
		g.mu.Unlock()
		g.leave(view)
		return err
	}
	return nil
}

// leave undoes a Start that failed. Its requests may wait for as long as
// the connection is cut off (go-zookeeper cannot cancel one): it runs in
// the background, on a goroutine the Session's Close waits for, with a
// context that ends with the Session, so that Start returns as soon as
// ctx ends. A Close meanwhile waits for it (PersistentNode.Close does).
func (g *GroupMember) leave(view *TreeCache) {
	g.node.abandon()
	cleanup := func(ctx context.Context) {
		_ = view.Close(ctx)
		close(g.done)
	}
	if !g.s.goBackground(0, cleanup) {
		cleanup(context.Background()) // the Session is closed: nothing waits on the server
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

// SetData sets this member's data (nil: 0 bytes; see
// PersistentNode.SetData, which also says how it fails).
func (g *GroupMember) SetData(ctx context.Context, data []byte) error {
	if g.err != nil {
		return g.err
	}
	return g.node.SetData(ctx, data)
}

// Members returns the group's members as last read, by id, with their
// data (this member's own included once its node is read back), and a
// channel that is closed at their next change: read Members again then.
// The map is the caller's; the data is shared: do not modify it.
func (g *GroupMember) Members() (map[string][]byte, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]byte, len(g.members))
	for id, data := range g.members {
		out[id] = data
	}
	return out, g.changed
}

// Changed returns a channel that is closed at the next change of
// Members.
//
// Deprecated: use Members, which returns the members and that channel
// together (one read, no change missed between the two).
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

// Close leaves the group: it stops the view (removing its watch from the
// server as TreeCache's Close does), waits within ctx for its goroutines,
// and deletes this member's node (see PersistentNode.Close for what it
// returns; ErrReleaseDeferred when ctx ends before the view has stopped).
// Members keeps returning the last view. Close is idempotent and safe to
// call concurrently; after a Start that failed, it waits for that Start's
// clean-up and returns nil.
func (g *GroupMember) Close(ctx context.Context) error {
	if g.err != nil {
		return nil
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	g.mu.Lock()
	g.closed = true
	started, view := g.started, g.view
	g.mu.Unlock()
	viewStopped := true
	if started {
		_ = view.Close(ctx)
		select {
		case <-g.done:
		case <-ctx.Done(): // the view stops on its own; the node must still go
			viewStopped = false
		}
	}
	err := g.node.Close(ctx)
	if err == nil && !viewStopped {
		err = fmt.Errorf("%w: %s: the view of the group stops in the background: %w", ErrReleaseDeferred, joinPath(g.path, g.id), ctx.Err())
	}
	return err
}

// load takes the view's events of the initial load, up to
// CacheInitialized.
func (g *GroupMember) load(ctx context.Context, view *TreeCache) error {
	for {
		select {
		case ev, ok := <-view.Events():
			if !ok {
				return firstErr(view.Err(), ErrClosed)
			}
			g.mu.Lock()
			if g.apply(ev) {
				g.notifyLocked()
			}
			g.mu.Unlock()
			if ev.Kind == CacheInitialized {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// follow applies the view's events until it stops.
func (g *GroupMember) follow(view *TreeCache) {
	defer close(g.done)
	for ev := range view.Events() {
		g.mu.Lock()
		if g.apply(ev) {
			g.notifyLocked()
		}
		g.mu.Unlock()
	}
	g.mu.Lock()
	if !g.closed {
		g.stopErr = view.Err()
	}
	g.mu.Unlock()
}

// apply takes one event of the view (g.mu held) and reports whether the
// members changed.
func (g *GroupMember) apply(ev CacheEvent) bool {
	if ev.Node == nil {
		return false
	}
	id, ok := strings.CutPrefix(ev.Node.Path, strings.TrimSuffix(g.path, "/")+"/")
	if !ok || id == "" || strings.Contains(id, "/") {
		return false // the group's node itself
	}
	old, had := g.members[id]
	switch ev.Kind {
	case NodeCreated, NodeChanged:
		if had && bytes.Equal(old, ev.Node.Data) && (old == nil) == (ev.Node.Data == nil) {
			return false
		}
		g.members[id] = ev.Node.Data
		return true
	case NodeDeleted:
		delete(g.members, id)
		return had
	}
	return false
}

func (g *GroupMember) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}
