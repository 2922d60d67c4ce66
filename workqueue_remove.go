package zkrecipes

// WorkQueue.Remove: Curator's DistributedIdQueue.remove, the deletion of
// the items put with an id.

import (
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
// connection losses under the Session's retry policy. When ctx ends, or
// another error stops it, it returns the items deleted so far and the
// error. A deletion whose reply was lost with the connection is settled
// once connected: the item still there is tried again; the item gone
// cannot tell whether this Remove or a consumer had it: Remove does not
// count it, goes on with the other items, and then fails with an error
// matching ErrOutcomeUnknown that names it.
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
	err := q.retrying(ctx, "getChildren", q.dir, func() (err error) {
		kids, err = s.children(ctx, q.dir)
		if err == zk.ErrNoNode {
			return nil
		}
		return err
	})
	return kids, err
}

// remove deletes the item name unless a consumer holds it. One
// transaction creates the item's lock (NodeExists: a consumer holds it),
// deletes the item and deletes the lock: what Curator's remove does in
// three requests under its lock path (create, delete, guaranteed delete).
func (q *WorkQueue) remove(ctx context.Context, name string) (bool, error) {
	s := q.s
	item, lock := joinPath(q.dir, name), joinPath(q.lockDir, name)
	ops := []Op{
		CreateOp(s.rel(lock), nil, WithMode(ModeEphemeral)),
		DeleteOp(s.rel(item)),
		DeleteOp(s.rel(lock)),
	}
	bo := s.cfg.retry()
	for made := false; ; {
		res, err := s.Multi(ctx, ops...)
		failed := func(op int, kind error) bool { return len(res) == len(ops) && errors.Is(res[op].Err, kind) }
		switch {
		case err == nil:
			return true, nil
		case failed(0, ErrNodeExists): // held
			return false, nil
		case failed(1, ErrNoNode): // taken, or removed, since the listing
			return false, nil
		case failed(0, ErrNoNode) && !made: // no lock path yet
			made = true
			if err := q.makePath(ctx, q.lockDir); err != nil {
				return false, err
			}
			continue
		case !errors.Is(err, ErrOutcomeUnknown) || ctx.Err() != nil:
			return false, err
		}
		// The reply was lost. Applied, the transaction deleted the item;
		// sequence numbers are not reused, so the item still there was not.
		var there bool
		if err := q.retrying(ctx, "exists", item, func() error {
			st, err := s.exists(ctx, item)
			there = st != nil && err == nil
			if err == zk.ErrNoNode {
				return nil
			}
			return err
		}); err != nil {
			return false, err
		}
		if !there {
			return false, err
		}
		d := bo.NextBackOff()
		if d == Stop {
			return false, fmt.Errorf("%w: remove %s: still there", ErrRetriesExhausted, s.rel(item))
		}
		if err := sleepCtx(ctx, d); err != nil {
			return false, err
		}
	}
}

// retrying runs read once connected, again after a connection loss or a
// session expiry under the Session's retry policy, until it succeeds, fails
// otherwise or ctx ends.
func (q *WorkQueue) retrying(ctx context.Context, op, path string, read func() error) error {
	s := q.s
	bo := s.cfg.retry()
	for {
		if _, _, err := s.awaitConnected(ctx); err != nil {
			return err
		}
		err := read()
		switch {
		case err == nil:
			return nil
		case !queueRetryable(err):
			return s.opError(op, path, err)
		}
		d := bo.NextBackOff()
		if d == Stop {
			return fmt.Errorf("%w: %s %s: %w", ErrRetriesExhausted, op, s.rel(path), err)
		}
		if err := sleepCtx(ctx, d); err != nil {
			return err
		}
	}
}
