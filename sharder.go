package zkrecipes

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// QueueSharder spreads one work queue over several WorkQueues, its
// shards, as Curator's QueueSharder does: every take lists the whole
// queue, and a queue of many thousands of items makes that listing slow,
// then larger than a reply may be (jute.maxbuffer), so once a shard holds
// as many items as the threshold
// (WithNewQueueThreshold), a new shard is added, up to WithMaxQueues.
// Producers put to one shard (Queue, Put), preferring shards that are
// not full; consumers take from every shard (Take). Items keep their
// order within a shard only: across shards they may be taken in any
// order.
//
// Its nodes are those of Curator's QueueSharder whose allocator builds
// DistributedQueues with a lock path: every child of the queues path is
// a shard, named "queue-<uuid>" by whoever added it, holding the items
// of a WorkQueue; the shard's items are locked under the locks path
// (WithShardLockPath), in a node named as the shard; and one participant
// of a leader election on the leader path (Curator's LeaderLatch layout)
// adds the shards. Curator sharders on the same paths share the queue:
// each sees the shards the other adds, and takes the other's items.
//
// Every sharder, leader or not, checks each shard's size once a period
// (WithThresholdCheckPeriod): that is how it learns of shards others
// added, and which shards it prefers for puts. Only the leader adds a
// shard, with a write that ZooKeeper refuses once it no longer leads; as
// Curator's, it adds one at every check that finds a shard at or over the
// threshold, so that a backlog left in one shard adds a shard a period
// until the maximum. A Start that finds no shard adds one, leader or not
// (as Curator's does): sharders that start together on an empty path may
// each add one.
//
// Shards are never removed: like Curator, a QueueSharder leaves its
// queues path, its shards and their lock paths in ZooKeeper when it is
// closed, for the items they hold outlive it. Delete them once the queue
// is retired and every sharder on it closed.
//
// NewQueueSharder does no I/O. A QueueSharder is safe for concurrent
// use; no goroutine of it is left after Close or the Session's Close.
type QueueSharder struct {
	s      *Session
	path   string // the queues path, as given
	dir    string // absolute
	locks  string // the locks path, as given
	leader *Election
	cfg    sharderConfig
	err    error
	next   atomic.Uint32 // the shard a Take tries first, in turn

	mu        sync.Mutex
	shards    map[string]*WorkQueue // by shard name
	preferred map[string]bool       // shards not over the threshold
	unusable  map[string]bool       // children of the queues path that cannot be shards (learn)
	changed   chan struct{}         // closed when shards grow
	lease     *Lease                // the leadership, while leading
	started   bool
	closed    bool
	closing   chan struct{} // closed by Close
	stop      context.CancelFunc
	done      chan struct{} // closed once the sharder's goroutines have ended
}

// shardPrefix starts the name of every shard a sharder adds (Curator's
// QUEUE_PREFIX), followed by a UUID.
const shardPrefix = "queue-"

// NewQueueSharder returns a sharder of the queues at queuesPath, whose
// leader is elected at leaderPath (both relative to the Session's
// namespace). The two paths, and the locks path (WithShardLockPath),
// must not be equal nor lie under one another. It does no I/O; an
// invalid path or option, or a nil session, is reported by every method
// of the QueueSharder (Close excepted).
func NewQueueSharder(s *Session, queuesPath, leaderPath string, opts ...SharderOption) *QueueSharder {
	sh := &QueueSharder{s: s, path: queuesPath, shards: map[string]*WorkQueue{}, preferred: map[string]bool{},
		changed: make(chan struct{}), closing: make(chan struct{}), done: make(chan struct{})}
	sh.cfg = sharderConfig{threshold: defaultShardThreshold, period: defaultShardCheckPeriod, maxQueues: defaultMaxShards}
	for _, o := range opts {
		if o == nil {
			sh.cfg.err = firstErr(sh.cfg.err, invalidArg("nil SharderOption"))
			continue
		}
		o(&sh.cfg)
	}
	sh.locks = sh.cfg.locksPath
	if sh.locks == "" {
		sh.locks = strings.TrimSuffix(queuesPath, "/") + "-locks"
	}
	sh.err = firstErr(checkRecipe(s, queuesPath), sh.cfg.err)
	if sh.err == nil {
		sh.err = firstErr(checkRecipe(s, leaderPath), checkRecipe(s, sh.locks))
	}
	if sh.err == nil {
		sh.err = disjointPaths(map[string]string{"queues path": queuesPath, "leader path": leaderPath, "locks path": sh.locks})
	}
	if sh.err == nil {
		var wq workQueueConfig
		for _, o := range sh.cfg.shardOpts {
			if o == nil {
				wq.err = firstErr(wq.err, invalidArg("nil WorkQueueOption in WithShardOptions"))
				continue
			}
			o(&wq)
		}
		switch {
		case wq.err != nil:
			sh.err = wq.err
		case wq.lockPath != "":
			sh.err = invalidArg("WithShardOptions: a shard's lock path follows from WithShardLockPath, not WithLockPath")
		}
	}
	if sh.err == nil {
		sh.dir = s.abs(queuesPath)
		sh.leader = NewElection(s, leaderPath)
		sh.err = sh.leader.err
	}
	return sh
}

// disjointPaths fails when one of paths (by what they are) equals another
// or lies under it: a sharder would take its leader's or its locks' nodes
// for shards, as Curator's would.
func disjointPaths(paths map[string]string) error {
	for a, pa := range paths {
		for b, pb := range paths {
			if a != b && (pa == pb || pb == "/" || strings.HasPrefix(pa, pb+"/")) {
				return invalidArg("queue sharder: the %s %s must not be the %s %s nor lie under it", a, pa, b, pb)
			}
		}
	}
	return nil
}

// Path returns the queues path, as given to NewQueueSharder.
func (sh *QueueSharder) Path() string { return sh.path }

// Start joins the sharder to the queue: it makes the queues path (a
// container, as Curator's) if missing, learns the shards there, adds one
// if there is none, and starts following the shards and campaigning for
// the leadership. ctx bounds only Start's own wait, through connection
// losses (the Session's retry policy paces them), never the sharder's
// life, which lasts until Close or the Session's Close. It fails with
// ctx's error, ErrRetriesExhausted, ErrSharderStarted when called twice,
// ErrClosed (also matching ErrSharderStarted) after or during Close,
// ErrClosed after the Session's Close, a ZooKeeper error such as
// ErrNotAuthorized, or the error of a bad argument (ErrInvalidPath,
// ErrInvalidArgument, ErrNilSession). A Start that fails has started
// nothing that lasts (a shard it added stays), and a later Start returns
// ErrSharderStarted.
func (sh *QueueSharder) Start(ctx context.Context) error {
	if sh.err != nil {
		return sh.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	sh.mu.Lock()
	switch {
	case sh.closed:
		sh.mu.Unlock()
		return &startAfterClose{once: ErrSharderStarted}
	case sh.started:
		sh.mu.Unlock()
		return ErrSharderStarted
	}
	sh.started = true
	sh.mu.Unlock()
	// Close may come during Start: Start's requests end with it.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sh.closing:
			cancel()
		case <-sctx.Done():
		}
	}()
	err := queueRetry(sctx, sh.s, "list", sh.dir, func() error { return sh.join(sctx) })
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		close(sh.done)
		return &startAfterClose{once: ErrSharderStarted}
	}
	if err != nil {
		sh.closed = true
		close(sh.closing)
		close(sh.done)
		return err
	}
	run, cancelRun := ctxUntil(sh.s.closedCh)
	sh.stop = cancelRun
	if !sh.s.spawn(func() { sh.run(run) }) {
		cancelRun()
		sh.closed = true
		close(sh.closing)
		close(sh.done)
		return ErrClosed
	}
	return nil
}

// join is Start's work: the queues path, its shards, and a first shard
// when there is none.
func (sh *QueueSharder) join(ctx context.Context) error {
	s := sh.s
	if err := s.ensureParents(ctx, sh.dir); err != nil {
		return err
	}
	kids, err := s.children(ctx, sh.dir)
	if err == zk.ErrNoNode { // the empty container was reaped meanwhile
		kids, err = nil, nil
	}
	if err != nil {
		return err
	}
	sh.learn(kids)
	sh.mu.Lock()
	some := len(sh.shards) > 0
	sh.mu.Unlock()
	if some {
		return nil
	}
	return sh.addShard(ctx, nil)
}

// addShard creates a shard "queue-<uuid>" under the queues path: with
// lease, only while the lease's node exists (a deposed leader adds
// nothing); without, as a Start that found no shard does.
func (sh *QueueSharder) addShard(ctx context.Context, lease *Lease) error {
	s := sh.s
	name := shardPrefix + newUUID()
	p := joinPath(sh.dir, name)
	var err error
	if lease == nil {
		err = s.createShared(ctx, p, nil, true)
	} else {
		_, err = s.Multi(ctx, lease.Check(), CreateOp(s.rel(p), nil))
	}
	if err != nil {
		return err
	}
	sh.s.cfg.log.Info("zkrecipes: queue shard added", "path", p)
	sh.learn([]string{name})
	return nil
}

// learn adds the shards among names that the sharder did not know yet,
// as preferred ones. A child of the queues path that cannot be a shard
// (another client's node whose name makes a path over the Session's
// request size limit, say) is left out, and said once: every Take and Put
// would fail on it.
func (sh *QueueSharder) learn(names []string) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	grew := false
	for _, name := range names {
		if _, ok := sh.shards[name]; ok || sh.unusable[name] {
			continue
		}
		opts := append(slices.Clone(sh.cfg.shardOpts), WithLockPath(joinPath(sh.locks, name)))
		q := NewWorkQueue(sh.s, joinPath(sh.path, name), opts...)
		if q.err != nil {
			if sh.unusable == nil {
				sh.unusable = map[string]bool{}
			}
			sh.unusable[name] = true
			sh.s.cfg.log.Warn("zkrecipes: queue sharder: a child of the queues path cannot be a shard; it is left out", "path", sh.path, "err", q.err)
			continue
		}
		sh.shards[name] = q
		sh.preferred[name] = true
		grew = true
	}
	if grew {
		close(sh.changed)
		sh.changed = make(chan struct{})
	}
}

// run is the sharder's life after Start: the campaign for the leadership
// and the periodic check, until ctx ends.
func (sh *QueueSharder) run(ctx context.Context) {
	defer close(sh.done)
	led := make(chan struct{})
	go func() {
		defer close(led)
		sh.lead(ctx)
	}()
	t := time.NewTimer(sh.cfg.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			<-led
			return
		case <-t.C:
		}
		sh.check(ctx)
		t.Reset(sh.cfg.period)
	}
}

// lead campaigns for the leadership until ctx ends, again after each
// term, and keeps the lease while it leads.
func (sh *QueueSharder) lead(ctx context.Context) {
	bo := sh.s.cfg.retry()
	var held atomic.Bool // a term began since the last failure
	hold := func(lctx context.Context, l *Lease) error {
		held.Store(true)
		sh.setLease(l)
		<-lctx.Done()
		sh.setLease(nil)
		return nil
	}
	for {
		err := sh.leader.Run(ctx, hold, WithRequeue(true))
		sh.setLease(nil)
		if ctx.Err() != nil || sh.s.isClosed() {
			return
		}
		if held.Swap(false) {
			bo.Reset() // a failure after a term starts the policy over
		}
		d := bo.NextBackOff()
		if d == Stop {
			// The policy gave up (at once, for NoRetry), but the campaign
			// goes on until Close: at a keeper's pace, never in a loop,
			// then under the policy again.
			d = maxKeepBackoff
			bo.Reset()
		}
		sh.s.cfg.log.Warn("zkrecipes: queue sharder's campaign failed; campaigning again", "path", sh.dir, "err", err, "wait", d)
		if sleepCtx(ctx, d) != nil {
			return
		}
	}
}

func (sh *QueueSharder) setLease(l *Lease) {
	sh.mu.Lock()
	sh.lease = l
	sh.mu.Unlock()
}

// leading returns the leadership's lease while this sharder leads.
func (sh *QueueSharder) leading() *Lease {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.lease != nil && sh.lease.Err() == nil {
		return sh.lease
	}
	return nil
}

// check is one periodic check, Curator's checkThreshold: it learns the
// shards others added, prefers for puts the shards at or below half the
// threshold and no longer those at or over it and, when one is over it
// and this sharder leads, adds a shard while there are fewer than the
// maximum. A failure is logged and waits for the next check.
func (sh *QueueSharder) check(ctx context.Context) {
	s := sh.s
	kids, err := s.children(ctx, sh.dir)
	if err != nil {
		if ctx.Err() == nil && err != zk.ErrNoNode {
			s.cfg.log.Warn("zkrecipes: queue sharder cannot list its shards", "path", sh.dir, "err", err)
		}
		return
	}
	sh.learn(kids)
	over := 0
	for _, name := range kids {
		sh.mu.Lock()
		_, shard := sh.shards[name]
		sh.mu.Unlock()
		if !shard {
			continue // left out (learn)
		}
		st, err := s.exists(ctx, joinPath(sh.dir, name))
		if err == zk.ErrNoNode {
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				s.cfg.log.Warn("zkrecipes: queue sharder cannot read a shard's size", "path", joinPath(sh.dir, name), "err", err)
			}
			return
		}
		n := int(st.NumChildren)
		sh.mu.Lock()
		switch {
		case n >= sh.cfg.threshold:
			over = n
			delete(sh.preferred, name)
		case n <= sh.cfg.threshold/2:
			sh.preferred[name] = true
		}
		sh.mu.Unlock()
	}
	lease := sh.leading()
	if over == 0 || lease == nil {
		return
	}
	sh.mu.Lock()
	count := len(sh.shards)
	sh.mu.Unlock()
	if count >= sh.cfg.maxQueues {
		s.cfg.log.Warn("zkrecipes: queue sharder at its maximum of shards; consider raising WithMaxQueues", "path", sh.dir, "max", sh.cfg.maxQueues)
		return
	}
	s.cfg.log.Info("zkrecipes: queue shard over the threshold", "path", sh.dir, "size", over, "threshold", sh.cfg.threshold)
	if err := sh.addShard(ctx, lease); err != nil && ctx.Err() == nil {
		s.cfg.log.Warn("zkrecipes: queue sharder cannot add a shard", "path", sh.dir, "err", err)
	}
}

// state returns nil while the sharder runs, and why it does not
// otherwise.
func (sh *QueueSharder) state() error {
	if sh.err != nil {
		return sh.err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch {
	case sh.closed:
		return ErrClosed
	case !sh.started:
		return ErrSharderNotStarted
	}
	return nil
}

// Queue returns one of the shards to put to, as Curator's getQueue: one
// picked at random among the shards not over the threshold at the last
// check, or among all of them when every one is. It fails with
// ErrSharderNotStarted before Start and ErrClosed after Close.
func (sh *QueueSharder) Queue() (*WorkQueue, error) {
	if err := sh.state(); err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	from := make([]string, 0, len(sh.shards))
	for name := range sh.preferred {
		from = append(from, name)
	}
	if len(from) == 0 {
		for name := range sh.shards {
			from = append(from, name)
		}
	}
	if len(from) == 0 { // not after a Start that succeeded
		return nil, ErrSharderNotStarted
	}
	return sh.shards[from[rand.IntN(len(from))]], nil
}

// Put puts item on a shard that Queue picks (see WorkQueue.Put, which
// says how it fails). Its errors are those of Queue and WorkQueue.Put.
func (sh *QueueSharder) Put(ctx context.Context, item []byte, opts ...PutOption) error {
	if ctx == nil && sh.err == nil {
		return invalidArg("nil context")
	}
	q, err := sh.Queue()
	if err != nil {
		return err
	}
	return q.Put(ctx, item, opts...)
}

// PutMulti puts items as one batch on a shard that Queue picks (see
// WorkQueue.PutMulti). Its errors are those of Queue and
// WorkQueue.PutMulti.
func (sh *QueueSharder) PutMulti(ctx context.Context, items [][]byte, opts ...PutOption) error {
	if ctx == nil && sh.err == nil {
		return invalidArg("nil context")
	}
	q, err := sh.Queue()
	if err != nil {
		return err
	}
	return q.PutMulti(ctx, items, opts...)
}

// Shards returns the paths of the shards this sharder knows (relative to
// the Session's namespace), sorted: those found at Start, those added
// since by this sharder, and those others added, as of this sharder's
// last check. It returns nil before Start.
func (sh *QueueSharder) Shards() []string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	out := make([]string, 0, len(sh.shards))
	for name := range sh.shards {
		out = append(out, joinPath(sh.path, name))
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return out
}

// Close stops the sharder: it ends its campaign (deleting its node under
// the leader path) and its checks, and waits within ctx for its
// goroutines; Takes waiting on it return ErrClosed. It leaves the queues
// path, the shards and the items in them, and the shards' lock paths
// (see QueueSharder); Queue's WorkQueues keep working. It returns nil
// once everything has stopped, or an error matching ErrReleaseDeferred
// when ctx ends first: the rest stops in the background (the leader's
// node goes with the Session at the latest). Close is idempotent and
// safe to call concurrently; Close before Start only keeps Start from
// running.
func (sh *QueueSharder) Close(ctx context.Context) error {
	if sh.err != nil {
		return nil
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	sh.mu.Lock()
	if !sh.closed {
		sh.closed = true
		close(sh.closing)
	}
	started, stop := sh.started, sh.stop
	sh.mu.Unlock()
	if !started {
		return nil
	}
	if stop != nil {
		stop()
	}
	select {
	case <-sh.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: queue sharder %s stops in the background: %w", ErrReleaseDeferred, sh.path, ctx.Err())
	}
}
