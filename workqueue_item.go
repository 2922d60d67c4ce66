package zkrecipes

// A WorkItem: one taken item of a WorkQueue, its fencing and its end
// (Ack, Release).

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// WorkItem is one node of a WorkQueue taken by a consumer, locked: a batch
// of one item (Put) or more (PutMulti). The consumer must end it with Ack
// or Release. Like a Lease, Done closes and Err says why when the lock is
// lost or the item ended: a consumer must stop when Done closes (or work
// under Context) and fence the effects of its work with Check or Token.
//
// A WorkItem is safe for concurrent use; its data must not be modified.
type WorkItem struct {
	q       *WorkQueue
	name    string   // the item node's name
	data    []byte   // its data, as read
	items   [][]byte // decoded; nil when not in Curator's encoding
	version int32    // its version once this take wrote it
	h       *hold    // the lock node

	mu    sync.Mutex
	ended bool // Ack or Release called
}

// Data returns the item: the first of the batch for a node made by
// PutMulti (see Items), nil for an item in no known encoding.
func (wi *WorkItem) Data() []byte {
	if len(wi.items) == 0 {
		return nil
	}
	return wi.items[0]
}

// Items returns every item of the node's batch, in the order put: one for
// a Put, all of them for a PutMulti.
func (wi *WorkItem) Items() [][]byte { return wi.items }

// Name returns the item node's name under the queue's path
// ("queue-0000000042").
func (wi *WorkItem) Name() string { return wi.name }

// ID returns the id the item was put with (WithID, or Curator's
// DistributedIdQueue.put), "" for an item put without one. It reads the
// id from the item's name, as Curator's DistributedIdQueue does: for an
// item put WithDelayUntil, whose due time sits where an id goes, it is
// that time in hexadecimal. A released item keeps its id.
func (wi *WorkItem) ID() string {
	id, _ := workItemIDOf(wi.name)
	return id
}

// Done returns a channel that is closed when the item's lock is lost or
// the item ended (Ack, Release).
func (wi *WorkItem) Done() <-chan struct{} { return wi.h.sig.done }

// Err returns nil while the item is held. After Done closes it returns
// ErrReleased once Ack or Release ended it, or an error matching
// ErrLockLost and its cause (ErrSuspended, ErrSessionExpired,
// ErrSessionChanged, ErrNodeDeleted, ErrClosed) if the lock was lost;
// once non-nil it keeps returning the same error.
func (wi *WorkItem) Err() error {
	select {
	case <-wi.h.sig.done:
		return wi.h.sig.err
	default:
		return nil
	}
}

// Context returns a copy of parent that is cancelled when the item's lock
// is lost or the item ends (Done closes), when parent is done, or when
// cancel is called. If Done closes first, context.Cause of the returned
// context is Err. Call cancel once the work under it completes. Context
// panics if parent is nil.
func (wi *WorkItem) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sig := wi.h.sig
	unhook := sig.onFire(func() { cancel(sig.err) })
	context.AfterFunc(ctx, unhook)
	return ctx, func() { cancel(nil) }
}

// Token returns the fencing token of this take, a ZooKeeper zxid: above
// the token of every earlier take of any WorkQueue item on the ensemble
// (of this item too, however often it was released and taken again).
// Hand it to the resource the work writes to and have it refuse a token
// lower than the highest it has seen.
func (wi *WorkItem) Token() int64 { return wi.h.token }

// Check returns a transaction op that succeeds only while this take is the
// item's latest: the item is still in the queue and no WorkQueue consumer
// has taken it since. Put it in a Session's Multi to make the work's
// writes conditional on it:
//
//	_, err := session.Multi(ctx, item.Check(), zkrecipes.SetOp("/done/42", result))
//
// Multi then fails, applying nothing, with an error matching ErrItemLost
// once the item was taken again, acked or released. (A Curator consumer's
// take leaves the item unchanged: against Curator consumers only Token
// fences. Like a Lease's check, it passes while a suspension puts the lock
// in doubt; watch Done for that.)
func (wi *WorkItem) Check() Op {
	p := joinPath(wi.q.dir, wi.name)
	return Op{kind: OpCheck, path: wi.q.s.rel(p), abs: p, cfg: nodeConfig{version: wi.version}, item: true}
}

// Ack ends the item: it deletes the item and its lock in one transaction.
// It returns nil once the item is deleted. If the lock was lost (Done
// closed) but no WorkQueue consumer has taken the item since, Ack still
// deletes the item. If another consumer has taken it, or it is gone, Ack
// changes nothing and fails with an error matching ErrItemLost. A reply
// lost with the connection is settled once connected again; on an error
// matching ErrOutcomeUnknown (ctx ended while the request was on its way,
// or the session ended before the outcome could be read) the item may or
// may not be deleted. On every
// error the lock goes (in the background if it must), so that the item, if
// still there, goes to another consumer. A second Ack or Release returns
// ErrReleased; a nil ctx, ErrInvalidArgument with the item still held.
func (wi *WorkItem) Ack(ctx context.Context) error { return wi.end(ctx, false) }

// Release ends the item without processing it: in one transaction it
// deletes the item, puts its data back at the tail of the queue as a new
// item (Curator's ErrorMode REQUEUE) and deletes the lock. It keeps the
// item's name prefix, where Curator's REQUEUE gives every requeued item
// the plain one. Its outcomes are those of Ack: nil once requeued; with
// ErrItemLost nothing changed.
func (wi *WorkItem) Release(ctx context.Context) error { return wi.end(ctx, true) }

func (wi *WorkItem) end(ctx context.Context, requeue bool) error {
	if ctx == nil {
		return invalidArg("nil context")
	}
	wi.mu.Lock()
	if wi.ended {
		wi.mu.Unlock()
		return ErrReleased
	}
	wi.ended = true
	wi.mu.Unlock()
	e := &workItemEnd{wi: wi, requeue: requeue}
	wi.h.handoff = e
	wi.h.release(ctx)
	if e.ran {
		return e.err
	}
	// The lock was lost first: the item is still this take's if its
	// version is.
	return wi.apply(ctx, requeue, false)
}

// workItemEnd is the release of a WorkItem's hold: the transaction of Ack
// or Release, which deletes the lock with the item.
type workItemEnd struct {
	plainHandoff
	wi      *WorkItem
	requeue bool
	ran     bool
	err     error
}

func (e *workItemEnd) release(ctx context.Context, _ *Session, _ string, _ bool) error {
	e.ran = true
	e.err = e.wi.apply(ctx, e.requeue, true)
	return nil // apply removes the lock on every path
}

// apply runs Ack's or Release's transaction, with the delete of the lock
// when withLock is set.
func (wi *WorkItem) apply(ctx context.Context, requeue, withLock bool) error {
	s := wi.q.s
	item := s.rel(joinPath(wi.q.dir, wi.name))
	ops := []Op{DeleteOp(item, WithVersion(wi.version))}
	if requeue {
		again := s.rel(joinPath(wi.q.dir, requeuePrefix(wi.name)))
		ops = append(ops, CreateOp(again, wi.data, WithMode(ModePersistentSequential)))
	}
	if withLock {
		ops = append(ops, DeleteOp(s.rel(wi.h.node.path)))
	}
	res, err := s.Multi(ctx, ops...)
	last := len(ops) - 1
	switch {
	case err == nil:
		return nil
	case withLock && len(res) == len(ops) && errors.Is(res[last].Err, ErrNoNode) && res[0].Err == ErrTxnAborted:
		// The lock went with its session, the item is still this take's.
		return wi.apply(ctx, requeue, false)
	case withLock && errors.Is(err, ErrOutcomeUnknown) && ctx.Err() == nil:
		switch applied, known := wi.settle(ctx); {
		case applied:
			s.disown(wi.h.node.path)
			return nil
		case known && wi.unchanged(ctx, item):
			// Not applied, and the item is still at this take's version
			// (the Session could not tell, a read after the reconnection
			// having failed): send it again.
			return wi.apply(ctx, requeue, withLock)
		case known:
			s.removeNode(wi.h.node)
			return fmt.Errorf("%w: %s: changed or deleted by another client", ErrItemLost, item)
		}
	}
	if withLock {
		s.removeNode(wi.h.node)
	}
	if len(res) == len(ops) && (errors.Is(res[0].Err, ErrNoNode) || errors.Is(res[0].Err, ErrBadVersion)) {
		return fmt.Errorf("%w: %s: %w", ErrItemLost, item, res[0].Err)
	}
	return err
}

// settle tells whether Ack's or Release's transaction, whose reply was
// lost, was applied, once connected again under the lock's session (the
// Session's Multi has found the item no longer at this take's version):
// the lock is gone only if it was, since once the item has ended nothing
// else of this Session deletes it. known is false when that cannot be
// read (the session changed, a read failed).
func (wi *WorkItem) settle(ctx context.Context) (applied, known bool) {
	s := wi.q.s
	gen, _, err := s.awaitConnected(ctx)
	if err != nil || gen != wi.h.node.gen {
		return false, false
	}
	switch _, err = s.exists(ctx, wi.h.node.path); {
	case err == zk.ErrNoNode:
		return true, true
	case err == nil:
		return false, true
	}
	return false, false
}

// unchanged tells whether the item (relative path) is still at this
// take's version; false when it is not, or cannot be read.
func (wi *WorkItem) unchanged(ctx context.Context, item string) bool {
	st, err := wi.q.s.Exists(ctx, item)
	return err == nil && st != nil && st.Version == wi.version
}

// requeuePrefix is the name a released item is put back under: its own,
// less the sequence number.
func requeuePrefix(name string) string {
	if len(name) < len(workItemPrefix)+10 {
		return workItemPrefix
	}
	return name[:len(name)-10]
}
