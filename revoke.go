package zkrecipes

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// revokeMessage is the data Curator's Revoker writes into a lock node to
// ask its holder to release.
var revokeMessage = []byte("__REVOKE__")

// WithRevocable(true) makes the lock's holders revocable: any process may ask a
// holder to release, with Revoke or Curator's Revoker.attemptRevoke, and
// the holder's Lease.Revoked channel closes. Revocation is cooperative:
// the holder keeps the lock until it releases it. A request made while the
// contender still waits is seen once it is granted. A lock without this
// option ignores such requests. It applies to Mutex and both sides of an
// RWMutex (Curator's revocable locks), and to SemaphoreMutex and each
// lease of a Semaphore (Curator's are not revocable).
//
// As with Curator's revocable locks, each node holds no data unless
// WithNodeData sets some; data equal to the revocation request itself
// ("__REVOKE__") makes every method of the recipe fail with
// ErrInvalidArgument. Default: not revocable.
func WithRevocable(on bool) LockOption {
	return lockOpt(func(c *lockConfig) { c.revocable = on })
}

func (c lockConfig) checkRevocable() error {
	if c.revocable && c.custom && bytes.Equal(c.nodeData, revokeMessage) {
		return invalidArg("node data %q of a revocable lock reads as a revocation request", revokeMessage)
	}
	return nil
}

// Revoked returns a channel that is closed when some process asked the
// holder to release the lease (see Revoke), for a lease of a lock made
// WithRevocable; for any other lease, or a MultiLock's composite lease, it
// returns nil. A request does not end the lease: release it.
func (l *Lease) Revoked() <-chan struct{} {
	if l.h == nil || l.h.revoked == nil {
		return nil
	}
	return l.h.revoked.done
}

// Revoke asks the holder of the lock node at path (relative to the
// Session's namespace: the holder's Lease.Path, or the lock's path joined
// with a Participant's Node) to release it, as Curator's
// Revoker.attemptRevoke does: a holder that opted in (WithRevocable here,
// makeRevocable in Curator) is told, any other holder is undisturbed. A
// node that does not exist (its holder has gone) is not an error. Only
// holders can be revoked: Revoke fails with ErrNotHolder, writing nothing,
// for the node of a Mutex, RWMutex or LeaderSelector contender that still
// waits. It fails with ErrInvalidArgument, writing nothing, for a node that
// is no lock holder's (not an ephemeral node named as a lock's or a
// semaphore lease's: the lock's own path, say), and with ErrInvalidPath,
// ErrNilSession, ErrInvalidArgument for a nil ctx, ctx's error, ErrClosed
// or a ZooKeeper error.
//
// Curator's Revoker checks nothing: pointed at a waiting node that its
// contender then gives up within a few milliseconds, it can make a
// zkrecipes waiter further back take that for a release (see
// WithFastHandoff). Aim it at holders only.
func Revoke(ctx context.Context, s *Session, path string) error {
	if err := checkRecipe(s, path); err != nil {
		return err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	notHolder := invalidArg("revoke %s: not a lock holder's node; pass the holder's Lease.Path, or the lock's path joined with a Participant's Node", path)
	abs := s.abs(path)
	if !lockNodeName(baseName(abs)) {
		return notHolder
	}
	// Lock nodes are ephemeral: a persistent node or a container (the
	// lock's own path) is someone's data, never overwritten.
	st, err := s.exists(ctx, abs)
	switch {
	case err == zk.ErrNoNode:
		return nil
	case err != nil:
		return s.opError("revoke", abs, err)
	case st.EphemeralOwner == 0:
		return notHolder
	}
	waiting, err := s.waitingLockNode(ctx, abs)
	if err != nil {
		return s.opError("revoke", abs, err)
	}
	if waiting {
		return fmt.Errorf("%w: %s is waiting for the lock, not holding it; revoke its holder", ErrNotHolder, path)
	}
	_, err = call(ctx, s, "setData", abs, func() (struct{}, error) {
		_, err := s.sendSet(abs, revokeMessage, -1)
		return struct{}{}, err
	}, nil)
	if err == nil || err == zk.ErrNoNode {
		return nil
	}
	return s.opError("revoke", abs, err)
}

// lockNodeName reports whether name is that of a lock's node (Mutex,
// RWMutex, LeaderSelector, Curator's InterProcessMutex) or of a semaphore
// lease: the nodes a revocable holder may own.
func lockNodeName(name string) bool {
	for _, m := range []string{"lock-", writeName, readName, semLeaseName} {
		if strings.Contains(name, m) {
			return true
		}
	}
	return false
}

// watchRevoke watches the hold's node for a revocation request until the
// hold ends, on a goroutine the Session's Close waits for.
func (h *hold) watchRevoke() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sig.fired() {
		return
	}
	h.revoked = newSignal()
	h.s.spawn(h.awaitRevoke)
}

func (h *hold) awaitRevoke() {
	ctx, cancel := ctxUntil(h.sig.done)
	defer cancel()
	for {
		data, _, w, err := h.s.getW(ctx, h.node.path)
		switch {
		case err == nil && bytes.Equal(data, revokeMessage):
			h.revoked.fire(nil)
			return
		case err == nil:
		case isRetryable(err):
			if _, _, err := h.s.awaitConnected(ctx); err != nil {
				return
			}
			continue
		default: // the node or the hold is gone
			return
		}
		select {
		case <-h.sig.done:
			return
		case ev := <-w:
			if ev.Type != zk.EventNodeDataChanged {
				return // deleted, or the session is ending
			}
		}
	}
}

// waitingLockNode reports whether abs is the node of a Mutex, RWMutex or
// LeaderSelector contender that still waits behind another. A waiter
// further back may be told of such a node's release by a data change and
// a deletion (the marked release, see handoff.go): a revocation request
// written into it, followed by its contender giving up, could pass for one.
func (s *Session) waitingLockNode(ctx context.Context, abs string) (bool, error) {
	name := baseName(abs)
	var nodes []queueNode
	var pred predicate
	kids, err := s.children(ctx, parentPath(abs))
	switch {
	case err == zk.ErrNoNode:
		return false, nil
	case err != nil:
		return false, err
	case strings.Contains(name, readName):
		nodes, pred = sortNodes(kids, rwMarkers), readPredicate
	case strings.Contains(name, writeName):
		nodes, pred = sortNodes(kids, rwMarkers), maxLeasesPredicate(1)
	case strings.Contains(name, "lock-"):
		nodes, pred = sortNodes(kids, mutexMarkers), maxLeasesPredicate(1)
	default:
		return false, nil // not a queued lock node (a latch's waiters never take a mark)
	}
	i := indexOf(nodes, name)
	if i < 0 {
		return false, nil // gone: nothing to revoke
	}
	held, _ := pred(nodes, i)
	return !held, nil
}
