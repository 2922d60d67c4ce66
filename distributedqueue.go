package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Queue is a FIFO queue of byte items on one path, wire-compatible with
// Curator's SimpleDistributedQueue: a Curator process and a Queue on the
// same path offer to and take from the same queue. Items are taken in the
// order the server sequenced their offers.
//
// Each item is taken once, however many Sessions and Curator clients take
// concurrently: taking an item is deleting its node, only one delete
// succeeds, and only the consumer whose delete succeeded returns the item
// with a nil error. A consumer that loses its connection or session before
// its delete reaches the server has taken nothing; the item stays for the
// next consumer. The one case ZooKeeper leaves open (ZOOKEEPER-1262) is a
// delete that was sent but whose reply was lost with the connection: if the
// item is gone afterwards, the consumer cannot learn whether its delete or
// another consumer's removed it. Take and Poll then return the item
// together with an error matching ErrTakeUncertain: processing such items
// gives at-least-once delivery, dropping them at-most-once. Likewise an
// Offer that fails once its create was sent may have enqueued its item.
//
// ZooKeeper makes a poor queue at scale (Curator's Tech Note 4): every
// item is a child of one node, a take lists them all, and a listing larger
// than a client can read (1 MiB by default for a Java client: some 60,000
// items) fails, so that consumers can take nothing until items are removed
// by hand. Use it for small queues of coordination work; use a message
// broker for volume.
//
// NewQueue does no I/O. A Queue is safe for concurrent use.
type Queue struct {
	s    *Session
	path string // as given
	dir  string // absolute
	err  error

	// next holds, sorted, the items of the last listing that no take of
	// this Queue has tried yet, and nextBound that listing's bound (see
	// listed). Every item offered since sorts after them while the parent
	// lives (sequence numbers only grow), so a take may try them first
	// without a listing and still take in FIFO order. A container parent
	// deleted and made again starts its sequence over, and a cached name may
	// then name a newer item: the bound tells it apart.
	mu        sync.Mutex
	next      []string
	nextBound int64
}

// listed is a listing of the queue's items, sorted, and its bound: the
// parent's Pzxid when it was listed, the zxid of its last child created or
// deleted, so that no listed item has a greater czxid. A node read later
// under a listed name is the listed item only if its czxid is not greater:
// an item created since, under a parent made again, has a greater one.
type listed struct {
	items []string
	bound int64
}

// queueItemPrefix names every item node: P/qn-<seq10> (Curator's PREFIX).
const queueItemPrefix = "qn-"

// NewQueue returns a queue on path (relative to the Session's namespace).
// It does no I/O; an invalid path or a nil session is reported by every
// method of the Queue.
func NewQueue(s *Session, path string) *Queue {
	q := &Queue{s: s, path: path, err: checkRecipe(s, path)}
	if q.err == nil {
		q.dir = s.abs(path)
	}
	return q
}

// Offer appends item to the queue, creating the queue's path (as
// container nodes, like Curator) when missing. A nil item fails with
// ErrInvalidArgument and one too large for the Session's request size
// limit with ErrDataTooLarge, before any call; an empty item is valid.
//
// On any other error the item may still have been enqueued: when the
// connection is lost before the reply, or ctx ends first, the server may
// have created its node (if ctx ended, Offer deletes such a node in the
// background, unless a consumer took it first).
func (q *Queue) Offer(ctx context.Context, item []byte) error {
	if q.err != nil {
		return q.err
	}
	if item == nil {
		return invalidArg("nil queue item")
	}
	node := joinPath(q.dir, queueItemPrefix)
	if err := q.s.checkNodeData(q.path, item, node+"0000000000"); err != nil {
		return err
	}
	for made := false; ; made = true {
		_, err := q.s.create(ctx, node, item, zk.FlagSequence)
		if err == zk.ErrNoNode && !made {
			if err = q.s.ensureParents(ctx, q.dir); err != nil {
				return q.s.opError("create", q.dir, err)
			}
			continue
		}
		if err != nil {
			return q.s.opError("create", node, err)
		}
		return nil
	}
}

// Take removes and returns the item at the head of the queue, waiting for
// one while the queue is empty. It waits on a watch, never by polling, and
// through connection losses and session expiries (the Session's retry
// policy paces retries). When ctx ends first it returns ctx's error and has
// taken nothing; after Close, ErrClosed. To wait on a path that does not
// exist, Take creates it, as Curator does, as container nodes: the server
// deletes them once an item has come and gone.
//
// Taking an item is deleting its node. Once Take has sent that delete it
// waits for the reply even if ctx ends, so that an item it took is
// returned. When the connection is lost after the delete was sent, and the
// item is gone once the connection is back (or ctx ends, or the retry
// policy gives up, before that is known), Take cannot know whether its own
// delete or another consumer's removed it: it returns the item together
// with an error matching ErrTakeUncertain. Every other error comes with a
// nil item, and then this call took no item.
func (q *Queue) Take(ctx context.Context) ([]byte, error) {
	return q.head(ctx, true, true)
}

// Poll removes and returns the item at the head of the queue, or fails
// with ErrQueueEmpty at once when there is none. Its errors are those of
// Take.
func (q *Queue) Poll(ctx context.Context) ([]byte, error) {
	return q.head(ctx, true, false)
}

// Peek returns the item at the head of the queue without removing it, or
// fails with ErrQueueEmpty when there is none. Another consumer may take
// the item at any time.
func (q *Queue) Peek(ctx context.Context) ([]byte, error) {
	return q.head(ctx, false, false)
}

// head reads the first item of the queue, removes it when remove is set,
// and waits for one when wait is set (else fails with ErrQueueEmpty).
func (q *Queue) head(ctx context.Context, remove, wait bool) ([]byte, error) {
	if q.err != nil {
		return nil, q.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	return takeLoop(ctx, q.s, func(watching bool) takeRound[[]byte] {
		return q.round(ctx, remove, wait, watching)
	})
}

// round is one round of head's takeLoop: a listing (or the cached rest of
// the last one), and a take from it.
func (q *Queue) round(ctx context.Context, remove, wait, watching bool) takeRound[[]byte] {
	s := q.s
	var (
		l   listed
		ls  listing
		err error
	)
	cached := remove && !watching && q.takeCache(&l)
	if !cached {
		ls = listQueue(ctx, s, q.dir, watching)
		err = ls.err
	}
	r := takeRound[[]byte]{listed: err == nil && !cached, watch: ls.w}
	if err == nil {
		if !cached {
			l = listed{queueItems(ls.kids), ls.parent.Pzxid}
		}
		var item []byte
		item, err = q.takeFirst(ctx, l, remove)
		if err == nil || errors.Is(err, ErrTakeUncertain) {
			return r.done(item, err)
		}
	}
	switch {
	case err == errNoItem && cached, err == errRemade:
		r.step = takeAgain
	case err == errNoItem || err == zk.ErrNoNode:
		if !wait {
			return r.done(nil, fmt.Errorf("%w: %s", ErrQueueEmpty, s.rel(q.dir)))
		}
		if err == zk.ErrNoNode && watching {
			// No node to watch: make the path, as Curator's take does.
			if err = s.ensureParents(ctx, q.dir); err != nil && !queueRetryable(err) {
				return r.done(nil, s.opError("create", q.dir, err))
			}
			r.step = takeAgain
		}
	case queueRetryable(err):
		r.err = err
	default:
		return r.done(nil, s.opError("getChildren", q.dir, err))
	}
	return r
}

// takeStep is what a round of takeLoop leads to.
type takeStep int

const (
	takeWait  takeStep = iota // nothing to take: list with a watch, then wait
	takeAgain                 // list again at once, watching as before
	takeDone                  // the take has its result
)

// takeRound is the outcome of one round of takeLoop: a listing of the
// queue and a take from it.
type takeRound[T any] struct {
	step   takeStep
	v      T
	err    error           // with takeDone, the take's; else a retryable failure
	listed bool            // a listing went through: the retry policy starts over
	watch  <-chan zk.Event // the listing's children watch
	also   <-chan zk.Event // another watch that ends the wait (a lock gone)
	due    time.Time       // when the wait ends, unless zero
	// wait, when set, is the wait instead of watch, also and due (a
	// QueueSharder's round waits on every shard's watches).
	wait func(ctx context.Context) error
}

// done returns r as the take's result.
func (r takeRound[T]) done(v T, err error) takeRound[T] {
	r.step, r.v, r.err = takeDone, v, err
	return r
}

// takeLoop is the take loop of the queues (Queue, WorkQueue, and
// WorkQueue's wait for room): it runs round until round has the result.
// Each round lists without a watch first, so that a round that finds what
// it wants leaves no watch behind; only a round that finds nothing is
// followed by one that lists with a watch and, finding nothing either,
// waits for the watch (or round's other wake-ups), ctx or Close. A failure
// round reports (a lost connection, an expiry: a queue holds nothing tied
// to its session) is waited out under the Session's retry policy.
func takeLoop[T any](ctx context.Context, s *Session, round func(watching bool) takeRound[T]) (T, error) {
	var zero T
	bo := s.cfg.retry()
	watching := false
	for {
		r := round(watching)
		if r.listed {
			bo.Reset() // the next failure is a new one
		}
		switch {
		case r.step == takeDone:
			return r.v, r.err
		case r.err != nil:
			if err := queuePause(ctx, s, bo, r.err); err != nil {
				return zero, err
			}
			watching = false
		case r.step == takeAgain:
		case !watching:
			watching = true
		default:
			wait := r.wait
			if wait == nil {
				wait = func(ctx context.Context) error { return r.await(ctx, s) }
			}
			if err := wait(ctx); err != nil {
				return zero, err
			}
			watching = false
		}
	}
}

// listQueue lists a queue's parent dir, with a children watch when
// watching.
func listQueue(ctx context.Context, s *Session, dir string, watching bool) listing {
	if watching {
		return watchList(s, ctx, dir)
	}
	return plainList(s, ctx, dir)
}

// await waits for r's watches to fire or its due time to come.
func (r takeRound[T]) await(ctx context.Context, s *Session) error {
	var due <-chan time.Time
	if !r.due.IsZero() {
		t := time.NewTimer(time.Until(r.due))
		defer t.Stop()
		due = t.C
	}
	select {
	case <-r.watch:
	case <-r.also:
	case <-due:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closedCh:
		return ErrClosed
	}
	return nil
}

// errNoItem is takeFirst's report that no listed item could be had.
var errNoItem = errors.New("zkrecipes: no queue item")

// errRemade is takeFirst's report that the parent was deleted and made
// again since the listing: its names no longer tell the order.
var errRemade = errors.New("zkrecipes: queue parent made again")

// takeFirst reads, and removes when remove is set, the first item of l
// that is still there. Like Curator, it takes qn- children in name order
// and skips other children.
func (q *Queue) takeFirst(ctx context.Context, l listed, remove bool) (item []byte, err error) {
	for i, k := range l.items {
		p := joinPath(q.dir, k)
		data, st, err := q.s.get(ctx, p)
		switch {
		case err == zk.ErrNoNode:
			continue // another consumer took it
		case err != nil && !queueRetryable(err):
			return nil, q.s.opError("getData", p, err)
		case err != nil:
			return nil, err
		case st.Czxid > l.bound:
			// Not the listed item but one offered since, under a parent
			// made again: an older item of the new parent may sort after
			// it. Nothing is taken; the caller lists again.
			q.dropCache()
			return nil, errRemade
		}
		if !remove {
			return data, nil
		}
		// Once sent, the delete is waited for even if ctx ends: a delete
		// that succeeds after its caller gave up would lose the item.
		switch err = q.s.delete(context.WithoutCancel(ctx), p); {
		case err == nil:
			q.putCache(listed{l.items[i+1:], l.bound})
			return data, nil
		case err == zk.ErrNoNode:
			continue
		case errors.Is(err, zk.ErrNoServer):
			// go-zookeeper fails a request it never sent with ErrNoServer:
			// nothing was taken.
			return nil, err
		case queueRetryable(err):
			// The delete may have run on the server (ZOOKEEPER-1262): look
			// once the connection is back.
			return q.settle(ctx, p, st.Czxid, data, err)
		default:
			return nil, q.s.opError("delete", p, err)
		}
	}
	return nil, errNoItem
}

// queueItems returns the item names among kids, sorted as Curator sorts
// them (as strings), skipping foreign children as Curator does.
func queueItems(kids []string) []string {
	items := make([]string, 0, len(kids))
	for _, k := range kids {
		if strings.HasPrefix(k, queueItemPrefix) {
			items = append(items, k)
		}
	}
	slices.Sort(items)
	return items
}

// takeCache moves the cached items into *l and reports whether there were
// any.
func (q *Queue) takeCache(l *listed) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	*l = listed{q.next, q.nextBound}
	q.next = nil
	return len(l.items) > 0
}

// putCache caches l, the rest of a listing after a taken item. Two takes
// of one Queue may race: both lists are merged, so that no item older than
// the first cached one is left out of the cache, under the lower bound
// (items of the newer listing above it fail the check, and a take lists
// again).
func (q *Queue) putCache(l listed) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.next) == 0 {
		q.next, q.nextBound = slices.Clone(l.items), l.bound
		return
	}
	q.next = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(q.next), l.items...))))
	q.nextBound = min(q.nextBound, l.bound)
}

// dropCache forgets the cached items.
func (q *Queue) dropCache() {
	q.mu.Lock()
	q.next = nil
	q.mu.Unlock()
}

// settle decides a take whose delete of p (the item created at czxid)
// failed with cause, which leaves it unknown whether the server ran it: if
// the item is still there, nothing was taken and the caller tries again;
// if it is gone (p missing, or naming an item offered since under a parent
// made again), the item (data) is returned as possibly taken by another
// consumer as well.
func (q *Queue) settle(ctx context.Context, p string, czxid int64, data []byte, cause error) ([]byte, error) {
	bo := q.s.cfg.retry()
	for {
		if err := queuePause(ctx, q.s, bo, cause); err != nil {
			// Unknown whether this consumer took the item: hand it over.
			return data, fmt.Errorf("%w: %s: %w", ErrTakeUncertain, q.s.rel(p), err)
		}
		st, err := q.s.exists(ctx, p)
		switch {
		case err == nil && st.Czxid == czxid:
			return nil, cause // not taken: the caller lists again
		case err == nil || err == zk.ErrNoNode:
			return data, fmt.Errorf("%w: %s", ErrTakeUncertain, q.s.rel(p))
		case !queueRetryable(err):
			return data, fmt.Errorf("%w: %s: %w", ErrTakeUncertain, q.s.rel(p), err)
		}
		cause = err
	}
}

// queuePause waits for the connection and a back-off step after a queue
// request failed with cause, and fails when the retry policy gives up, ctx
// ends or the Session is closed.
func queuePause(ctx context.Context, s *Session, bo BackOff, cause error) error {
	if _, _, err := s.awaitConnected(ctx); err != nil {
		return err
	}
	return backOff(ctx, bo, "", cause)
}

// queueRetry runs fn once connected, again after a lost connection or a
// session expiry under the Session's retry policy, until it succeeds,
// fails otherwise (the error names op and path) or ctx ends.
func queueRetry(ctx context.Context, s *Session, op, path string, fn func() error) error {
	bo := s.cfg.retry()
	for {
		if _, _, err := s.awaitConnected(ctx); err != nil {
			return err
		}
		err := fn()
		if err == nil || !queueRetryable(err) {
			return s.opError(op, path, err)
		}
		if err := backOff(ctx, bo, op+" "+s.rel(path), err); err != nil {
			return err
		}
	}
}

// queueRetryable tells whether a queue request may be sent again: after a
// lost connection and after a session expiry too, since a queue holds
// nothing tied to its session.
func queueRetryable(err error) bool {
	return isRetryable(err) || errors.Is(err, zk.ErrSessionExpired)
}
