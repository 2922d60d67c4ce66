package zkrecipes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// The keeper: the goroutine of a running PersistentNode that puts its
// node in place and keeps it there.

// keep is the keeper's loop: put the node in place, watch it, and look
// again when the watch fires, the connection comes back, or SetData asks.
func (n *PersistentNode) keep(ctx context.Context) {
	states, cancel := n.s.subscribe()
	defer cancel()
	// Nobody keeps the node any more; a failure of the Session's security
	// that ended the keeper is said.
	var stopErr error
	defer func() { n.setStatus(false, stopErr) }()
	if !n.cfg.mode.sequential() {
		// A PersistentNode closed or abandoned before at this path may
		// not have deleted its node yet: hold the path, so that it never
		// deletes this node, and replace what it left if of the wrong kind.
		left, release, err := n.s.claim(ctx, n.abs)
		if err != nil {
			return
		}
		defer release()
		n.replaceKind = left
	}
	bo := n.s.cfg.retry()
	for {
		if !n.settle(ctx, states) {
			return
		}
		gen, _, err := n.s.awaitConnected(ctx)
		if err != nil {
			if refused(err) {
				stopErr = err
			}
			return
		}
		w, err := n.ensure(ctx, gen)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			n.setStatus(false, err)
			d := bo.NextBackOff()
			if d == Stop {
				d = maxKeepBackoff
			}
			switch {
			case errors.Is(err, ErrDataTooLarge):
				d = 0 // it would fail again: wait for SetData or a reconnection
				n.s.cfg.log.Warn("zkrecipes: persistent node not in place, will retry", "path", n.path, "err", err)
			case refused(err):
				// Only a change of the ACL (by another client) can let it
				// through, and nothing tells of one: look again now and
				// then, never in a loop.
				d = max(d, maxKeepBackoff)
				n.s.cfg.log.Warn("zkrecipes: persistent node refused by zookeeper, will look again", "path", n.path, "err", err, "in", d)
			default:
				n.s.cfg.log.Warn("zkrecipes: persistent node not in place, will retry", "path", n.path, "err", err)
			}
			if !n.await(ctx, nil, states, d) {
				return
			}
			continue
		}
		bo.Reset()
		n.replaceKind = false
		n.setStatus(true, nil)
		if !n.await(ctx, w, states, 0) {
			return
		}
	}
}

// maxKeepBackoff is the wait between attempts once the retry policy has
// given up: a PersistentNode never stops trying.
const maxKeepBackoff = 2 * time.Second

// await waits until the watch w fires, the connection comes back, SetData
// asks, or (if d > 0) d passes. A suspension makes the node's status
// unknown meanwhile. It returns false when the keeper must stop.
func (n *PersistentNode) await(ctx context.Context, w <-chan zk.Event, states <-chan StateChange, d time.Duration) bool {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	for {
		select {
		case <-w:
			return true
		case <-n.wake:
			return true
		case <-timer:
			return true
		case c, ok := <-states:
			if !ok || c.State == StateClosed {
				return false
			}
			switch c.State {
			case StateSuspended, StateLost:
				n.setStatus(false, nil)
			case StateReconnected, StateConnected:
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

// settle waits while the Session damps connection flaps
// (WithFlapDamping), taking the state changes meanwhile: the node's
// status stays unknown until the connection settles and the node is
// looked at. It returns false when the keeper must stop.
func (n *PersistentNode) settle(ctx context.Context, states <-chan StateChange) bool {
	if n.s.damp == nil {
		return true
	}
	settled := n.s.damp.wait()
	for {
		select {
		case <-settled:
			return true
		case c, ok := <-states:
			if !ok || c.State == StateClosed {
				return false
			}
			if c.State == StateSuspended || c.State == StateLost {
				n.setStatus(false, nil)
			}
		case <-ctx.Done():
			return false
		}
	}
}

// ensure makes sure the node exists under session gen with the data last
// set, and returns a watch on it.
func (n *PersistentNode) ensure(ctx context.Context, gen *generation) (<-chan zk.Event, error) {
	for {
		n.mu.Lock()
		node, data, ver, written := n.node, n.data, n.dataVer, n.written
		n.mu.Unlock()
		if node == "" && !n.cfg.mode.sequential() {
			node = n.abs
		}
		if node != "" {
			cur, st, w, err := n.s.getW(ctx, node)
			switch {
			case err == zk.ErrNoNode:
				n.forget(node)
			case err != nil:
				return nil, err
			case n.cfg.mode.ephemeral() && st.EphemeralOwner != gen.id && n.isMine(st.EphemeralOwner):
				// Ours, of a session that has ended or is ending: it is
				// about to vanish, so make it again under this one.
				n.s.cfg.log.Info("zkrecipes: persistent node left by an older session; replacing it", "path", node)
				if err := n.s.delete(ctx, node); err != nil && err != zk.ErrNoNode {
					return nil, err
				}
				n.forget(node)
			case n.replaceKind && (st.EphemeralOwner != 0) != n.cfg.mode.ephemeral():
				// Left by an earlier PersistentNode of this Session with
				// another mode (a discovery registration whose Type
				// changed): make it again in this mode, as Curator does.
				n.s.cfg.log.Info("zkrecipes: persistent node of another kind left at the path; replacing it", "path", node)
				if err := n.s.delete(ctx, node); err != nil && err != zk.ErrNoNode {
					return nil, err
				}
				n.forget(node)
			default:
				if n.cfg.mode.ephemeral() && st.EphemeralOwner != gen.id {
					n.s.cfg.log.Warn("zkrecipes: persistent node exists, owned by another session; adopting it", "path", node,
						"owner", fmt.Sprintf("0x%x", st.EphemeralOwner))
				}
				n.adopt(node, st.EphemeralOwner, st.EphemeralOwner == gen.id)
				if written >= ver {
					return w, nil
				}
				if bytes.Equal(cur, data) {
					n.markWritten(ver)
					return w, nil
				}
				if _, err := call(ctx, n.s, "setData", node, func() (*zk.Stat, error) { return n.s.sendSet(node, data, -1) }, nil); err != nil {
					return nil, err
				}
				n.markWritten(ver)
				// read again, with a fresh watch
			}
		}
		if n.cfg.mode.sequential() {
			found, err := n.findOwn(ctx, gen)
			if err != nil {
				return nil, err
			}
			if found {
				continue
			}
		}
		if err := n.create(ctx, gen, data, ver); err != nil {
			return nil, err
		}
	}
}

// create makes the node once; a lost reply leaves it to the next look.
func (n *PersistentNode) create(ctx context.Context, gen *generation, data []byte, ver uint64) error {
	path := n.abs
	if n.cfg.mode.sequential() {
		path = joinPath(parentPath(n.abs), protectedName(n.uuid, baseName(n.abs)))
	}
	p, err := n.s.createKept(ctx, path, data, n.cfg.mode, n.cfg.ttl)
	if !refused(err) && err != zk.ErrNoNode {
		n.mu.Lock()
		n.mayExist = true
		n.mu.Unlock()
	}
	switch {
	case err == zk.ErrNoNode:
		return n.s.ensureParents(ctx, parentPath(n.abs))
	case err == zk.ErrNodeExists:
		return nil // adopted on the next look
	case err != nil:
		return err
	}
	var owner int64
	if n.cfg.mode.ephemeral() {
		n.s.own(p)
		owner = gen.id
	}
	n.adopt(p, owner, owner != 0)
	n.markWritten(ver)
	return nil
}

// findOwn looks for a node carrying the protected name: one that a create
// whose reply was lost made. It adopts one of this session (or a
// persistent one) and deletes ephemeral ones of older sessions.
func (n *PersistentNode) findOwn(ctx context.Context, gen *generation) (bool, error) {
	dir := parentPath(n.abs)
	kids, err := n.s.children(ctx, dir)
	if err == zk.ErrNoNode {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	found := false
	for _, k := range kids {
		if !strings.HasPrefix(k, protectedPrefix+n.uuid) {
			continue
		}
		p := joinPath(dir, k)
		st, err := n.s.exists(ctx, p)
		if err == zk.ErrNoNode {
			continue
		}
		if err != nil {
			return false, err
		}
		if !found && (!n.cfg.mode.ephemeral() || st.EphemeralOwner == gen.id) {
			found = true
			n.adopt(p, st.EphemeralOwner, st.EphemeralOwner == gen.id)
			continue
		}
		if err := n.s.delete(ctx, p); err != nil && err != zk.ErrNoNode {
			return false, err
		}
	}
	return found, nil
}

// adopt records node as the current one; mine says that owner is a
// session of this PersistentNode's (its create, or found by its UUID).
func (n *PersistentNode) adopt(node string, owner int64, mine bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.node = node
	if mine && owner != 0 {
		n.mine[owner] = true
	}
}

func (n *PersistentNode) forget(node string) {
	n.s.disown(node)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.node == node {
		n.node, n.written = "", 0
	}
}

func (n *PersistentNode) isMine(owner int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mine[owner]
}

func (n *PersistentNode) markWritten(ver uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ver > n.written {
		n.written = ver
	}
}
