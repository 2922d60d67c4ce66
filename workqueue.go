package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// WorkQueue is a queue of work items that loses none: a consumer takes an
// item under a lock and then acks it (the item is gone) or releases it (the
// item goes back to the queue). An item whose consumer dies, or loses its
// lock, stays in the queue for another consumer: each item is processed at
// least once, and twice only after its first consumer lost the lock and
// was told (WorkItem.Done).
//
// Its nodes and bytes are those of Curator's DistributedQueue built with a
// lockPath (QueueBuilder.lockPath, ErrorMode REQUEUE): items are
// persistent sequential nodes "queue-<seq>" under the queue's path, each
// holding a batch of one or more items in Curator's item encoding, and a
// taken item is locked by an ephemeral node of the same name under the
// lock path (WithLockPath). Curator producers and consumers on the same
// paths share the queue with WorkQueues: each takes the other's items.
//
// Put's WithPriority, WithDelayUntil and WithID name items as Curator's
// DistributedPriorityQueue, DistributedDelayQueue and DistributedIdQueue
// do; consumers built WithDelayOrder honour delays, as the delay queue's
// do, and Remove deletes the items of an id, as the id queue's remove.
//
// Items are offered in the order the server sequenced their puts; with
// several consumers, or an item released, they may be processed out of
// order. Like Curator, a WorkQueue makes its path and its lock path
// persistent nodes (their missing parents containers) the first time it
// needs them, and leaves them: delete them once the queue is retired.
// ZooKeeper makes a poor queue at scale (Curator's Tech Note 4): keep it
// for modest volumes of coordination work (see Queue).
//
// NewWorkQueue does no I/O and runs no goroutine. A WorkQueue is safe for
// concurrent use.
type WorkQueue struct {
	s       *Session
	path    string // as given
	dir     string // absolute
	lockDir string // absolute
	cfg     workQueueConfig
	err     error
}

// workItemPrefix names every item node (Curator's QUEUE_ITEM_NAME).
const workItemPrefix = "queue-"

// NewWorkQueue returns a work queue on path (relative to the Session's
// namespace). It does no I/O; an invalid path or option, or a nil
// session, is reported by every method of the WorkQueue.
func NewWorkQueue(s *Session, path string, opts ...WorkQueueOption) *WorkQueue {
	q := &WorkQueue{s: s, path: path, err: checkRecipe(s, path)}
	for _, o := range opts {
		if o == nil {
			q.cfg.err = invalidArg("nil WorkQueueOption")
			break
		}
		o(&q.cfg)
	}
	if q.err == nil {
		q.err = q.cfg.err
	}
	lockPath := q.cfg.lockPath
	if lockPath == "" {
		lockPath = strings.TrimSuffix(path, "/") + "-locks"
	}
	if q.err == nil {
		q.err = checkRecipe(s, lockPath)
	}
	if q.err == nil && (lockPath == path || strings.HasPrefix(lockPath, strings.TrimSuffix(path, "/")+"/")) {
		q.err = invalidArg("work queue %s: the lock path %s must lie outside the queue's path", path, lockPath)
	}
	if q.err == nil {
		q.dir, q.lockDir = s.abs(path), s.abs(lockPath)
	}
	return q
}

// Put appends item to the queue, as one node holding a batch of one item
// (a Curator consumer receives it as one message). WithPriority,
// WithDelayUntil and WithID put it as Curator's priority, delay and id
// queues do. A nil item, or a bad option, fails with
// ErrInvalidArgument (a bad id with ErrInvalidItemID, which matches it)
// and one too large for the Session's request size
// limit with ErrDataTooLarge, before any call; an empty item is valid.
// With WithMaxItems, Put first waits for room, until ctx ends.
//
// Put sends its create once, and never makes two nodes; it does not
// retry. When the reply is lost with the connection, Close cuts it short
// or ctx ends while it is on its way, it fails with an error matching
// ErrOutcomeUnknown and the cause: the item may have been enqueued (and
// stays so: a consumer may already have it), and a Put sent again may
// enqueue it twice, as with Curator's put.
func (q *WorkQueue) Put(ctx context.Context, item []byte, opts ...PutOption) error {
	if item == nil {
		return invalidArg("nil work item")
	}
	return q.put(ctx, [][]byte{item}, opts)
}

// PutMulti appends items to the queue as one node, one batch (Curator's
// putMulti): a consumer takes them together, in one WorkItem, and acks or
// releases them together. It fails with ErrInvalidArgument for no item or
// a nil one. Its other errors are those of Put.
func (q *WorkQueue) PutMulti(ctx context.Context, items [][]byte, opts ...PutOption) error {
	if len(items) == 0 {
		return invalidArg("a batch of no work item")
	}
	if slices.ContainsFunc(items, func(b []byte) bool { return b == nil }) {
		return invalidArg("nil work item in a batch")
	}
	return q.put(ctx, items, opts)
}

func (q *WorkQueue) put(ctx context.Context, items [][]byte, opts []PutOption) error {
	if q.err != nil {
		return q.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	var cfg putConfig
	for _, o := range opts {
		if o == nil {
			return invalidArg("nil PutOption")
		}
		o(&cfg)
	}
	if cfg.err != nil {
		return cfg.err
	}
	s := q.s
	data := encodeWorkItems(items)
	node := joinPath(q.dir, workItemPrefix+cfg.infix)
	if err := s.checkNodeData(q.path, data, node+"0000000000"); err != nil {
		return err
	}
	if q.cfg.maxItems > 0 {
		if err := q.awaitRoom(ctx); err != nil {
			return err
		}
	}
	for made := false; ; made = true {
		// No abandon: an item created after ctx ended stays, as a
		// createShared node does; a consumer may already have it.
		_, err := call(ctx, s, "create", node, func() (string, error) {
			return s.sendCreate(node, data, zk.FlagSequence)
		}, nil)
		switch {
		case err == zk.ErrNoNode && !made:
			if err = q.makePath(ctx, q.dir); err != nil {
				return err
			}
			continue
		case err == ErrClosed: // closed before it was sent
			return err
		case replyLost(ctx, err) || errors.Is(err, zk.ErrClosing):
			return fmt.Errorf("%w: create %s: no reply: %w", ErrOutcomeUnknown, s.rel(node), err)
		}
		return s.opError("create", node, err)
	}
}

// makePath creates dir as a persistent node, and its missing parents as
// containers, as Curator's DistributedQueue.start does for its queue and
// lock paths. Not containers: a Curator consumer neither makes them again
// nor survives their deletion (its lock create would fail for good).
func (q *WorkQueue) makePath(ctx context.Context, dir string) error {
	if err := q.s.createShared(ctx, dir, nil, true); err != nil && err != zk.ErrNodeExists {
		return q.s.opError("create", dir, err)
	}
	return nil
}

// awaitRoom waits until the queue's path has fewer children than the
// bound (all children, as Curator counts them).
func (q *WorkQueue) awaitRoom(ctx context.Context) error {
	s := q.s
	_, err := takeLoop(ctx, s, func(watching bool) takeRound[struct{}] {
		l := listQueue(ctx, s, q.dir, watching)
		r := takeRound[struct{}]{watch: l.w}
		switch err := l.err; {
		case err == zk.ErrNoNode || err == nil && len(l.kids) < q.cfg.maxItems:
			return r.done(struct{}{}, nil)
		case queueRetryable(err):
			r.err = err
		case err != nil:
			return r.done(struct{}{}, s.opError("getChildren", q.dir, err))
		}
		return r
	})
	return err
}

// Take locks the first item of the queue that no other consumer holds and
// returns it, waiting for one while there is none. The first is the
// lowest by name (with WithDelayOrder, the earliest due among those due). It waits on watches,
// never by polling: for new items, and for the lock of any held item to
// go (its consumer acked, released or died). It waits through connection
// losses and session expiries (the Session's retry policy paces retries).
// When ctx ends first it returns ctx's error and holds nothing; after
// Close, ErrClosed.
//
// The item stays in the queue, locked, until the caller calls Ack or
// Release; it must call one of them. If the lock is lost before (the
// session expires, or is suspended under the Session's LossPolicy, or the
// lock node is deleted) Done closes and another consumer may take the
// item: stop working on it, or fence its effects (Check, Token).
//
// An item whose data is not in Curator's item encoding is returned, locked
// and with no Items, together with an error matching ErrBadWorkItem: Ack
// it to drop it. Every other error comes with a nil item.
func (q *WorkQueue) Take(ctx context.Context) (*WorkItem, error) {
	if q.err != nil {
		return nil, q.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	return takeLoop(ctx, q.s, func(watching bool) takeRound[*WorkItem] {
		return q.round(ctx, watching)
	})
}

// round is one round of Take's takeLoop: a listing, and a take of the
// first item it can lock.
func (q *WorkQueue) round(ctx context.Context, watching bool) takeRound[*WorkItem] {
	s := q.s
	l := listQueue(ctx, s, q.dir, watching)
	err := l.err
	r := takeRound[*WorkItem]{listed: err == nil, watch: l.w}
	if err == nil {
		var names []string
		var wi *WorkItem
		names, r.due = q.ready(l.kids, time.Now()) // r.due: when the next item is due (WithDelayOrder)
		wi, r.also, err = q.takeFirst(ctx, names, watching)
		if wi != nil {
			return r.done(wi, err)
		}
	}
	switch {
	case err == errRelist:
		r.step = takeAgain
	case err == nil: // nothing to take: wait
	case err == zk.ErrNoNode:
		// No queue yet: make it, to have a node to watch.
		if err := q.makePath(ctx, q.dir); err != nil && !queueRetryable(err) {
			return r.done(nil, err)
		}
		r.step = takeAgain
	case queueRetryable(err):
		r.err = err
	default:
		return r.done(nil, s.opError("take", q.dir, err))
	}
	return r
}

// errRelist is takeFirst's report that the lock of an item it found held
// went while it set its watch: list and try again at once.
var errRelist = errors.New("zkrecipes: list the work queue again")

// errItemBusy and errItemGone are lock's reports that another consumer
// holds the item, or that it is gone: try the next one.
var (
	errItemBusy = errors.New("zkrecipes: work item locked by another consumer")
	errItemGone = errors.New("zkrecipes: work item gone")
)

// takeFirst locks the first of names (sorted) that it can. When it locks
// none and watch is set, it returns a watch that fires when any lock
// under the lock path goes, if some item was held by another consumer.
func (q *WorkQueue) takeFirst(ctx context.Context, names []string, watch bool) (*WorkItem, <-chan zk.Event, error) {
	var busy []string
	for _, name := range names {
		wi, err := q.lock(ctx, name)
		switch {
		case wi != nil:
			return wi, nil, err
		case err == errItemBusy:
			busy = append(busy, name)
		case err == errItemGone:
		default:
			return nil, nil, err
		}
	}
	if !watch || len(busy) == 0 {
		return nil, nil, nil
	}
	// One watch on the lock path's children stands for every held item's
	// lock; a lock gone before the watch was set is seen in its listing.
	locks, _, w, err := q.s.childrenStatW(ctx, q.lockDir)
	if err == zk.ErrNoNode {
		return nil, nil, errRelist
	}
	if err != nil {
		return nil, nil, err
	}
	for _, name := range busy {
		if !slices.Contains(locks, name) {
			return nil, nil, errRelist
		}
	}
	return nil, w, nil
}

// workItemNames returns the item names among kids, sorted as Curator's
// DistributedIdQueue sorts them (as strings, less any "|...|" part: an id
// leaves the order of sequence numbers alone), skipping foreign children
// as Curator does. For plain and priority names that is
// DistributedQueue's order, as strings.
func workItemNames(kids []string) []string {
	names := make([]string, 0, len(kids))
	for _, k := range kids {
		if strings.HasPrefix(k, workItemPrefix) {
			names = append(names, k)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := strings.Compare(workItemOrderKey(a), workItemOrderKey(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return names
}

// lock takes the item name: it creates the item's lock node, then reads
// the item and writes its data back unchanged, so that the item's version
// (which Check and Ack name) and modification zxid (the token) are this
// take's own. On any failure after the lock was made, the lock goes.
func (q *WorkQueue) lock(ctx context.Context, name string) (*WorkItem, error) {
	s := q.s
	node, err := q.createLock(ctx, joinPath(q.lockDir, name), joinPath(q.dir, name))
	if err != nil {
		return nil, err
	}
	wi, err := q.read(ctx, node, name)
	if wi == nil {
		s.removeNode(node)
	}
	return wi, err
}

// read reads the item name, locked by node, and makes it this take's.
func (q *WorkQueue) read(ctx context.Context, node ownNode, name string) (*WorkItem, error) {
	s := q.s
	p := joinPath(q.dir, name)
	data, st, err := s.get(ctx, p)
	if err == zk.ErrNoNode {
		return nil, errItemGone // acked by a consumer whose lock went since
	}
	if err != nil {
		return nil, err
	}
	// The request may run on a worker after call returned (ctx ended):
	// it reads its own copy of the version, never st, which call's
	// result overwrites.
	version := st.Version
	st, err = call(ctx, s, "setData", p, func() (*zk.Stat, error) {
		return s.sendSet(p, data, version)
	}, nil)
	if err == zk.ErrNoNode || err == zk.ErrBadVersion {
		return nil, errItemGone // taken by a consumer that honours no lock
	}
	if err != nil {
		return nil, err
	}
	epoch, err := q.grant(ctx, node)
	if err != nil {
		return nil, err
	}
	wi := &WorkItem{q: q, name: name, data: data, version: st.Version}
	wi.h = newHold(s, node, st.Mzxid, nil, epoch, func() {})
	wi.items, err = decodeWorkItems(data)
	if err != nil {
		err = fmt.Errorf("%s: %w", s.rel(p), err)
	}
	return wi, err
}

// grant returns the ownership epoch the lock node starts under, once the
// Session is connected under the node's ZooKeeper session; it fails with
// zk.ErrSessionExpired when that session is gone (the lock with it).
func (q *WorkQueue) grant(ctx context.Context, node ownNode) (*signal, error) {
	for {
		gen, epoch := q.s.current()
		if gen != node.gen || gen.fired() {
			return nil, zk.ErrSessionExpired
		}
		if !epoch.fired() {
			return epoch, nil
		}
		if _, _, err := q.s.awaitConnected(ctx); err != nil {
			return nil, err
		}
	}
}

// createLock creates the ephemeral lock node p of the item at item (0
// bytes; Curator writes its host's address, which nobody reads), making
// the lock path when missing. The create and a check that the item is
// still there are one transaction, so that a name of an old listing whose
// item another consumer acked since costs one request, not a lock, a read
// and an unlock. It fails with errItemBusy when another consumer holds
// the lock, errItemGone when the item is gone. A transaction whose reply
// was lost is settled by the lock's owner once the connection is back:
// the lock is ours only if this ZooKeeper session made it. A clean-up of
// an earlier lock of the item still under way in the background (its
// delete's reply lost) ends first: retried, it would delete this one.
func (q *WorkQueue) createLock(ctx context.Context, p, item string) (ownNode, error) {
	s := q.s
	for made := false; ; {
		if err := s.awaitDeletes(ctx, p); err != nil {
			return ownNode{}, err
		}
		gen, _, err := s.awaitConnected(ctx)
		if err != nil {
			return ownNode{}, err
		}
		res, err := call(ctx, s, "multi", p, func() ([]zk.MultiResponse, error) {
			return s.sendMulti(p, &zk.CreateRequest{Path: p, Acl: toZKACL(s.cfg.acl), Flags: zk.FlagEphemeral},
				&zk.CheckVersionRequest{Path: item, Version: -1})
		}, func(_ []zk.MultiResponse, err error) { // the reply after ctx ended
			switch {
			case err == nil:
				s.own(p)
				s.deleteEventually(p, gen.id)
			case errors.Is(err, zk.ErrConnectionClosed): // may have been made
				q.dropIfOwned(p, gen)
			}
		})
		failed := func(op int, kind error) bool { return err != nil && len(res) == 2 && res[op].Error == kind }
		switch {
		case err == nil:
			s.own(p)
			return ownNode{path: p, gen: gen}, nil
		case failed(1, zk.ErrNoNode):
			return ownNode{}, errItemGone // acked since the listing: no lock made
		case failed(0, zk.ErrNodeExists):
			return ownNode{}, errItemBusy
		case failed(0, zk.ErrNoNode) && !made:
			made = true
			if err := q.makePath(ctx, q.lockDir); err != nil {
				return ownNode{}, err
			}
			continue
		case !errors.Is(err, zk.ErrConnectionClosed):
			return ownNode{}, err
		}
		// The create may have run (ZOOKEEPER-1262).
		switch mine, err := q.ownedLock(ctx, p, gen); {
		case err == errItemBusy:
			return ownNode{}, err
		case err != nil:
			q.dropIfOwned(p, gen)
			return ownNode{}, err
		case mine:
			s.own(p)
			return ownNode{path: p, gen: gen}, nil
		}
	}
}

// ownedLock tells, once connected, whether the lock node p is there and
// was made by the ZooKeeper session gen; it fails with errItemBusy when
// another session holds it.
func (q *WorkQueue) ownedLock(ctx context.Context, p string, gen *generation) (bool, error) {
	s := q.s
	bo := s.cfg.retry()
	for {
		now, _, err := s.awaitConnected(ctx)
		if err != nil {
			return false, err
		}
		st, err := s.exists(ctx, p)
		switch {
		case err == zk.ErrNoNode:
			return false, nil // not made: create it
		case err == nil && st.EphemeralOwner == gen.id && now == gen:
			return true, nil
		case err == nil && st.EphemeralOwner == gen.id:
			return false, zk.ErrSessionExpired // goes with its session
		case err == nil:
			return false, errItemBusy
		case !isRetryable(err):
			return false, err
		}
		if err := pace(ctx, bo); err != nil {
			return false, err
		}
	}
}

// dropIfOwned deletes, in the background, the lock node p if the
// ZooKeeper session gen made it: a create whose outcome is unknown when
// its caller gave up. Another consumer's lock of the same name is left.
// It waits for the connection as long as it takes (until Close): a lock
// of a live session left behind would hold its item from every consumer.
func (q *WorkQueue) dropIfOwned(p string, gen *generation) {
	s := q.s
	s.goBackground(0, func(ctx context.Context) {
		if mine, err := q.ownedLock(ctx, p, gen); err == nil && mine {
			s.removeNode(ownNode{path: p, gen: gen})
		}
	})
}
