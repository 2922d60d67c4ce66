package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// readyNode is the child of a double barrier's path that marks it full,
// as Curator names it.
const readyNode = "ready"

// DoubleBarrier is one member of a distributed double barrier on a
// ZooKeeper path, wire-compatible with Curator's DistributedDoubleBarrier:
// Enter blocks until n members have entered, and Leave blocks until every
// member that entered has left. Curator and Go members of the same path
// form one barrier.
//
// n is a threshold, not a limit: more than n members may enter. A member
// is an ephemeral node, so a member whose ZooKeeper session ends stops
// counting: the others wait for someone to take its place in Enter, and
// stop waiting for it in Leave. If every member's session ends between
// Enter and Leave, the barrier's "ready" node stays (as in Curator) and
// the next members to come pass Enter at once; the next Leave removes it.
//
// NewDoubleBarrier does no I/O. A DoubleBarrier is safe for concurrent
// use; its Enter and Leave run one at a time. Use one DoubleBarrier per
// member; after Leave it may Enter again.
type DoubleBarrier struct {
	s    *Session
	path string
	dir  string // absolute path of the barrier
	self string // absolute path of this member's node
	n    int
	data []byte
	err  error

	turn chan struct{} // held by the Enter or Leave running
	in   *generation   // the ZooKeeper session of this member's node; nil when not entered
}

// NewDoubleBarrier returns a member of the double barrier on path
// (relative to the Session's namespace) for n members. It does no I/O; an
// invalid path, a nil session or n <= 0 is reported by every method.
// Member nodes and the ready node hold this host's address as text, as
// Curator writes.
func NewDoubleBarrier(s *Session, path string, n int) *DoubleBarrier {
	b := &DoubleBarrier{s: s, path: path, n: n, turn: make(chan struct{}, 1), data: []byte(localAddress())}
	if b.err = checkRecipe(s, path); b.err != nil {
		return b
	}
	if n <= 0 {
		b.err = invalidArg("double barrier %s: member count %d must be positive", path, n)
		return b
	}
	b.dir = s.abs(path)
	b.self = joinPath(b.dir, newUUID())
	b.err = s.checkNodeData(path, b.data, b.self, joinPath(b.dir, readyNode))
	return b
}

// Path returns the barrier's path, as given to NewDoubleBarrier.
func (b *DoubleBarrier) Path() string { return b.path }

// Enter joins the barrier and blocks until n members have entered or ctx
// ends. Lost connections are waited through. It fails with ErrEntered if
// this member has entered and not left; with an error matching
// ErrSessionExpired (or ErrSessionChanged) if its session ended while it
// waited, its node gone with it (a session the Session gave up, its
// connection down for the whole session timeout, has ended too, even if
// the server kept it); with ErrNodeDeleted if another client deleted its
// node. On cancel, deadline or any error its node is deleted (in the
// background if the connection is down) and it has not entered.
func (b *DoubleBarrier) Enter(ctx context.Context) error {
	if err := b.lock(ctx); err != nil {
		return err
	}
	defer b.unlock()
	if b.in != nil {
		return fmt.Errorf("%w: %s", ErrEntered, b.path)
	}
	// A fresh node name each round: a delete of the last round's node
	// still pending in the background must not hit this one.
	b.self = joinPath(b.dir, newUUID())
	gen, err := b.join(ctx)
	if err != nil {
		return err
	}
	if err := b.awaitFull(ctx, gen); err != nil {
		b.s.removeNode(ownNode{path: b.self, gen: gen})
		return err
	}
	b.in = gen
	return nil
}

// join creates this member's node, and the barrier's path as a container
// if it is missing, and returns the session it belongs to. When it fails
// after a create was sent, the node that create may have made (its reply
// lost, ZOOKEEPER-1262) is deleted: it would count as a member.
func (b *DoubleBarrier) join(ctx context.Context) (*generation, error) {
	var gen, sent *generation
	err := b.s.retryConnLoss(ctx, "enter double barrier", func() error {
		g, _, err := b.s.awaitConnected(ctx)
		if err != nil {
			return err
		}
		sent = g
		_, err = b.s.create(ctx, b.self, b.data, zk.FlagEphemeral)
		if err == zk.ErrNoNode {
			if err = b.s.ensureParents(ctx, b.dir); err == nil {
				_, err = b.s.create(ctx, b.self, b.data, zk.FlagEphemeral)
			}
		}
		if err == zk.ErrNodeExists {
			// An earlier create whose reply was lost (ZOOKEEPER-1262):
			// the node is ours if it belongs to this session.
			var st *zk.Stat
			if _, st, err = b.s.get(ctx, b.self); err == nil && st.EphemeralOwner != g.id {
				err = fmt.Errorf("zkrecipes: double barrier %s: member node %s belongs to another session; retry later",
					b.path, baseName(b.self))
			}
		}
		if err != nil {
			return b.s.opError("create", b.self, err)
		}
		gen = g
		b.s.own(b.self)
		return nil
	})
	if err != nil && sent != nil {
		b.s.removeNode(ownNode{path: b.self, gen: sent})
	}
	return gen, err
}

// awaitFull waits until the barrier is full: this member's own listing
// counts n children (ready included, as Curator counts), or another
// member has created ready. The one that sees it full creates ready.
func (b *DoubleBarrier) awaitFull(ctx context.Context, gen *generation) error {
	for {
		// A children watch on the barrier (not an exists watch on ready,
		// which would stay on the server when the barrier never fills):
		// it fires on the next member's arrival or departure, on ready, or
		// when the barrier's node goes.
		kids, w, err := b.s.childrenW(ctx, b.dir)
		if err != nil && err != zk.ErrNoNode {
			if b.s.awaitReconnect(ctx, err) && !gen.fired() {
				continue
			}
			return b.memberErr(ctx, gen, err)
		}
		if !slices.Contains(kids, baseName(b.self)) {
			return b.memberErr(ctx, gen, zk.ErrNoNode)
		}
		if slices.Contains(kids, readyNode) {
			return nil
		}
		if len(kids) >= b.n {
			return b.markReady(ctx)
		}
		select {
		case <-w: // Look again after every change: a wake-up is not a full barrier.
		case <-gen.done:
			// The session of this member's node has ended for the Session,
			// though the node may live on (the Session gave up a session the
			// server kept): its place went with the session. Looking again
			// would wake here at once, for ever.
			return b.memberErr(ctx, gen, nil)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// markReady creates the ready node, which releases the members waiting in
// Enter.
func (b *DoubleBarrier) markReady(ctx context.Context) error {
	ready := joinPath(b.dir, readyNode)
	return b.s.retryConnLoss(ctx, "enter double barrier", func() error {
		err := b.s.createShared(ctx, ready, b.data, false)
		if err == nil || err == zk.ErrNodeExists {
			return nil
		}
		return b.s.opError("create", ready, err)
	})
}

// memberErr explains why this member's wait ended after err: ctx, the
// end of the session its node belonged to, the Session's close, or its
// node deleted by someone else.
func (b *DoubleBarrier) memberErr(ctx context.Context, gen *generation, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case gen.fired():
		return fmt.Errorf("zkrecipes: double barrier %s: member node lost with its session: %w", b.path, errors.Unwrap(gen.err))
	case b.sessionGone(gen):
		return fmt.Errorf("zkrecipes: double barrier %s: member node lost with its session: %w", b.path, ErrSessionExpired)
	case err == zk.ErrNoNode:
		return fmt.Errorf("%w: double barrier %s: member node %s", ErrNodeDeleted, b.path, baseName(b.self))
	}
	return b.s.opError("getChildren", b.dir, err)
}

// Leave leaves the barrier and blocks until every member has left or ctx
// ends. Members leave as Curator's do: the lowest watches the highest, the
// others delete their node and watch the lowest. Lost connections are
// waited through; a member whose session ended after Enter, its node gone
// with it, still waits for the others, and so does a member whose delete
// of its own node ran on the server while the reply was lost. It returns
// nil only once every member has left. It fails with ErrNotEntered if this
// member has not entered, and with ErrNodeDeleted if another client
// deleted its node before this member sent its own delete. On cancel or
// deadline it returns ctx's error, its node deleted (in the background if
// the connection is down). Either way this member has left and may Enter
// again.
func (b *DoubleBarrier) Leave(ctx context.Context) error {
	if err := b.lock(ctx); err != nil {
		return err
	}
	defer b.unlock()
	if b.in == nil {
		return fmt.Errorf("%w: %s", ErrNotEntered, b.path)
	}
	gen := b.in
	b.in = nil
	own := leaveSelf{exists: true}
	err := b.leave(ctx, gen, &own)
	if err != nil && own.exists {
		b.s.removeNode(ownNode{path: b.self, gen: gen})
	}
	return err
}

// leaveSelf is what Leave knows of this member's node.
type leaveSelf struct {
	exists bool // the node should still exist
	// sent: a delete of the node was sent. Its reply may have been lost
	// with the connection after the server ran it (ZOOKEEPER-1262): a node
	// missing since is this member's own leave.
	sent bool
}

func (b *DoubleBarrier) leave(ctx context.Context, gen *generation, own *leaveSelf) error {
	self := baseName(b.self)
	for {
		kids, err := b.s.children(ctx, b.dir)
		if err != nil && err != zk.ErrNoNode {
			if b.s.awaitReconnect(ctx, err) {
				continue
			}
			return b.memberErr(ctx, gen, err)
		}
		kids = slices.DeleteFunc(kids, func(k string) bool { return k == readyNode })
		slices.Sort(kids)
		i := slices.Index(kids, self)
		if i < 0 && own.exists {
			// Gone with its session, or by this member's own delete whose
			// reply was lost: either way it has left; wait for the others.
			// Only a node gone before any delete was sent, under a live
			// session, was deleted by another client.
			own.exists = false
			if !own.sent && !b.sessionGone(gen) {
				return b.memberErr(ctx, gen, zk.ErrNoNode)
			}
			b.s.disown(b.self)
		}
		// Curator 5.4 stops waiting here when one node is left even if it is
		// not its own; that one is still in (it may be a member that has not
		// started to leave while another gave up), so wait for it too.
		if len(kids) == 0 || (len(kids) == 1 && i == 0) {
			if err := b.deleteSelf(ctx, own); err != nil {
				if b.s.awaitReconnect(ctx, err) {
					continue
				}
				return b.memberErr(ctx, gen, err)
			}
			break
		}
		target := kids[0]
		if i == 0 {
			target = kids[len(kids)-1]
		} else if err := b.deleteSelf(ctx, own); err != nil {
			if b.s.awaitReconnect(ctx, err) {
				continue
			}
			return b.memberErr(ctx, gen, err)
		}
		// A data watch, set only if the node still exists: none is left
		// behind on a member already gone.
		_, _, w, err := b.s.getW(ctx, joinPath(b.dir, target))
		switch {
		case err == zk.ErrNoNode:
			continue
		case err != nil:
			if b.s.awaitReconnect(ctx, err) {
				continue
			}
			return b.memberErr(ctx, gen, err)
		}
		select {
		case <-w:
		case <-b.s.closedCh: // an adopted connection's watch outlives Close
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Every member has left: the barrier is reset for the next round.
	return b.s.retryConnLoss(ctx, "leave double barrier", func() error {
		err := b.s.delete(ctx, joinPath(b.dir, readyNode))
		if err == nil || err == zk.ErrNoNode {
			return nil
		}
		return b.s.opError("delete", joinPath(b.dir, readyNode), err)
	})
}

// deleteSelf deletes this member's node if it should still exist.
func (b *DoubleBarrier) deleteSelf(ctx context.Context, own *leaveSelf) error {
	if !own.exists {
		return nil
	}
	err := b.s.delete(ctx, b.self)
	if err != nil && err != zk.ErrNoNode {
		// go-zookeeper fails a request it never sent with ErrNoServer;
		// any other failure may come after the server ran the delete.
		own.sent = own.sent || !errors.Is(err, zk.ErrNoServer)
		return err
	}
	own.exists = false
	return nil
}

// sessionGone reports whether the ZooKeeper session of gen has ended,
// also before the Session has handled the news: the client already runs
// under another session id.
func (b *DoubleBarrier) sessionGone(gen *generation) bool {
	return gen.fired() || b.s.conn.SessionID() != gen.id
}

func (b *DoubleBarrier) lock(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	select {
	case b.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *DoubleBarrier) unlock() { <-b.turn }
