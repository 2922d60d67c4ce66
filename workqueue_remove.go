package zkrecipes

// WorkQueue.Remove: Curator's DistributedIdQueue.remove, the deletion of
// the items put with an id.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Remove deletes the items of the queue put with id (WithID, or Curator's
// DistributedIdQueue.put) that no consumer holds, and returns how many it
// deleted, as Curator's DistributedIdQueue.remove does. It lists the queue
// once: an item put after that listing is left.
//
// An item a consumer holds (taken, and not yet acked or released) is left
// to it, and not counted: acked, it is gone; released, it goes back to the
// queue with its id, for a later Remove; its lock lost, it is there for
// the next take or Remove. Remove locks each item as a consumer would, in
// the transaction that deletes it, so that no consumer, of this library
// or Curator's built with the same lock path, ever has an item Remove
// deleted (a consumer whose lock was lost may: its Ack then fails with
// ErrItemLost).
//
// A bad id fails with ErrInvalidItemID before any call; an id Curator's
// DistributedIdQueue wrote with '_' for a '/' or '|' is removed by that
// form. A queue never used holds nothing to remove. Remove waits through
// connection losses under the Session's retry policy, and settles a
// deletion whose reply was lost with the connection once connected again
// under the same ZooKeeper session. When ctx ends, or another error stops
// it, it returns the items deleted so far and the error, which matches
// ErrOutcomeUnknown if an item's deletion was on its way. If the session
// ends with a deletion's reply, an item found gone cannot tell whether
// this Remove or a consumer had it: Remove does not count it, goes on
// with the other items, and then fails with an error matching
// ErrOutcomeUnknown that names it.
func (q *WorkQueue) Remove(ctx context.Context, id string) (int, error) {
	if q.err != nil {
		return 0, q.err
	}
	if ctx == nil {
		return 0, invalidArg("nil context")
	}
	if err := checkWorkItemID(id); err != nil {
		return 0, err
	}
	kids, err := q.listOnce(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var unknown []string
	for _, name := range workItemNames(kids) {
		if got, ok := workItemIDOf(name); !ok || got != id {
			continue
		}
		switch removed, err := q.remove(ctx, name); {
		case removed:
			n++
		case errors.Is(err, ErrOutcomeUnknown) && ctx.Err() == nil:
			unknown = append(unknown, name)
		case err != nil:
			return n, err
		}
	}
	if len(unknown) > 0 {
		return n, fmt.Errorf("%w: remove %s: gone, perhaps taken by a consumer: %s", ErrOutcomeUnknown,
			q.path, strings.Join(unknown, ", "))
	}
	return n, nil
}

// listOnce lists the queue's path, once connected; nil when there is no
// queue yet.
func (q *WorkQueue) listOnce(ctx context.Context) ([]string, error) {
	s := q.s
	var kids []string
	err := queueRetry(ctx, q.s, "getChildren", q.dir, func() (err error) {
		kids, err = s.children(ctx, q.dir)
		if err == zk.ErrNoNode {
			return nil
		}
		return err
	})
	return kids, err
}

// remove deletes the item name unless a consumer holds it. One
// transaction creates the item's lock (NodeExists: a consumer holds it)
// and deletes the item; the lock is deleted after it. Curator's remove
// does the same in three requests under its lock path (create, delete,
// guaranteed delete). The lock holds a token of this call, so that a
// transaction whose reply was lost is settled by reading it: there, the
// transaction was applied; gone under the same ZooKeeper session, it was
// not (a lock of the transaction goes only with the session or the
// delete that follows it here); the item still there was not either.
// Only a lost reply and a session ended since leave the outcome unknown.
func (q *WorkQueue) remove(ctx context.Context, name string) (bool, error) {
	s := q.s
	item, lock := joinPath(q.dir, name), joinPath(q.lockDir, name)
	token := []byte(newUUID())
	bo := s.cfg.retry()
	for made := false; ; {
		if err := s.awaitDeletes(ctx, lock); err != nil { // as createLock's
			return false, err
		}
		sent, _, err := s.awaitConnected(ctx)
		if err != nil {
			return false, err
		}
		res, err := call(ctx, s, "multi", lock, func() ([]zk.MultiResponse, error) {
			return s.sendMulti(lock, &zk.CreateRequest{Path: lock, Data: token, Acl: toZKACL(s.cfg.acl), Flags: zk.FlagEphemeral},
				&zk.DeleteRequest{Path: item, Version: -1})
		}, func(_ []zk.MultiResponse, err error) { // the reply after ctx ended
			switch {
			case err == nil:
				s.deleteEventually(lock, sent.id)
			case errors.Is(err, zk.ErrConnectionClosed): // may have been applied
				q.dropLockIfMine(lock, token, sent)
			}
		})
		failed := func(op int, kind error) bool { return err != nil && len(res) == 2 && res[op].Error == kind }
		switch {
		case err == ErrClosed: // closed before it was sent
			return false, err
		case err == nil:
			q.dropLock(lock)
			return true, nil
		case failed(0, zk.ErrNodeExists): // held
			return false, nil
		case failed(1, zk.ErrNoNode): // taken, or removed, since the listing
			return false, nil
		case failed(0, zk.ErrNoNode) && !made: // no lock path yet
			made = true
			if err := q.makePath(ctx, q.lockDir); err != nil {
				return false, err
			}
			continue
		case !replyLost(ctx, err):
			return false, s.nodeErr("multi", lock, err)
		}
		err = outcomeUnknown("multi", s.rel(lock), err)
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return false, err // a lock made on the way is deleted when its reply comes
		}
		// The reply was lost.
		mine, there, moved, rerr := q.readRemoveOutcome(ctx, lock, item, token, sent)
		if rerr != nil {
			q.dropLockIfMine(lock, token, sent)
			return false, fmt.Errorf("%w: %w", err, rerr)
		}
		switch {
		case mine:
			q.dropLock(lock)
			return true, nil
		case !there && moved: // the lock, if made, went with its session
			return false, err
		case !there: // another consumer had it
			return false, nil
		}
		if err := backOff(ctx, bo, "remove "+s.rel(item), errors.New("the item is still there")); err != nil {
			return false, err
		}
	}
}

// readRemoveOutcome reads, once connected, what a remove's transaction
// sent under the ZooKeeper session sent did when its reply was lost: mine,
// the lock holds token (applied); moved, the session has changed since
// (the lock, if made, went with it); there, the item is still there.
func (q *WorkQueue) readRemoveOutcome(ctx context.Context, lock, item string, token []byte, sent *generation) (mine, there, moved bool, err error) {
	s := q.s
	err = queueRetry(ctx, s, "getData", lock, func() error {
		mine, there, moved = false, false, false
		now, _, err := s.awaitConnected(ctx)
		if err != nil {
			return err
		}
		if moved = now != sent; !moved {
			data, _, err := s.get(ctx, lock)
			switch {
			case err == nil:
				mine = bytes.Equal(data, token)
			case err != zk.ErrNoNode:
				return err
			}
		}
		if !mine {
			_, err := s.exists(ctx, item)
			switch {
			case err == nil:
				there = true
			case err != zk.ErrNoNode:
				return err
			}
		}
		return nil
	})
	return mine, there, moved, err
}

// dropLock deletes the lock node p that a remove made with its item's
// delete, under the current ZooKeeper session (gone with an earlier one).
// The item is gone: no consumer locks p any more, and a consumer's lock
// made there by a take that listed the item before is deleted by that
// take too.
func (q *WorkQueue) dropLock(p string) {
	gen, _ := q.s.current()
	q.s.removeNode(ownNode{path: p, gen: gen})
}

// dropLockIfMine deletes, in the background, the lock p if it holds token
// under the ZooKeeper session gen: the lock of a remove's transaction
// whose outcome was unknown when the remove gave up. It waits for the
// connection as long as it takes (until Close).
func (q *WorkQueue) dropLockIfMine(p string, token []byte, gen *generation) {
	s := q.s
	s.goBackground(0, func(ctx context.Context) {
		bo := s.cfg.retry()
		for {
			now, _, err := s.awaitConnected(ctx)
			if err != nil || now != gen {
				return // closed, or gone with its session
			}
			data, _, err := s.get(ctx, p)
			switch {
			case err == nil && bytes.Equal(data, token):
				s.removeNode(ownNode{path: p, gen: gen})
				return
			case err == nil || !isRetryable(err):
				return // not ours, or gone
			}
			if pace(ctx, bo) != nil {
				return
			}
		}
	})
}
