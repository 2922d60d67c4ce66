package zkrecipes

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// The shared queue every lock recipe runs on (Curator's LockInternals):
// create a protected EPHEMERAL_SEQUENTIAL node, list and sort the children,
// let the recipe's driver say "held" or "watch that node", watch it with
// getData, and clean up on every failure path.
//
// Three optimisations sit beside the loop, each behind one call:
// createListed (listing.go) lists the children right behind the create;
// the late self-watch (selfwatch.go) reads the own node only when needed;
// the fast handoff (handoff.go, chosen in handoffFor) lets a waiter take
// the lock on a notification without listing again.

// queue is one recipe's queue under dir, run by its driver.
type queue struct {
	s   *Session
	dir string // absolute path of the recipe
	driver
	obs observed // what it reports to the Session's Observer (observe.go)
}

// driver is what a recipe tells the shared queue (Curator's
// LockInternalsDriver): how its nodes are named and sorted, when a node
// holds, and which handoff its peers allow.
type driver struct {
	name    string   // node name after the protected prefix: "lock-", "__WRIT__", ...
	markers []string // sort markers
	kind    string   // recipe kind, to detect another recipe on the path
	pred    predicate
	// fast asks for the fast handoff (handoffFor): a waiter trusts its
	// first listing when every node is sequential.
	fast bool
	// noMark turns off the marked release (handoff.go) for recipes whose
	// foreign waiters cannot take a data change on the node they watch:
	// Curator's LeaderLatch acts on NodeDeleted only and does not set its
	// watch again, so a data change would leave it waiting forever.
	noMark bool
	// damped: under WithFlapDamping a pass after a start-over waits for
	// the connection to settle (an election's; its first waits in Campaign).
	damped bool
}

// handoff is how a waiter learns that the node it waits on is gone and
// where that leaves it, and how its holder later releases. plainHandoff is
// Curator's: a getData watch, a plain delete, and a new listing after
// every deletion.
type handoff interface {
	// requests is the number of requests watch sends for nodes[i].
	requests(nodes []queueNode, i int) int
	// watch sets a waiter's watch on target, nodes[i] of its listing.
	watch(ctx context.Context, s *Session, target string, nodes []queueNode, i int) (targetWatch, error)
	// next is where the waiter stands once nodes[i] is gone (marked: in
	// its holder's marked release), or relist to list the children again.
	next(pred predicate, nodes []queueNode, i int, own string, marked bool) (rest []queueNode, relist bool)
	// release deletes a held node; waited tells that it had nodes ahead.
	release(ctx context.Context, s *Session, path string, waited bool) error
}

// handoffFor is the handoff of a queue whose driver asks for the fast one
// (see handoff.go), with or without its marked release.
func handoffFor(fast, mark bool) handoff {
	if fast {
		return fastHandoff{mark: mark}
	}
	return plainHandoff{}
}

// plainHandoff is the handoff of a queue without the fast one.
type plainHandoff struct{}

func (plainHandoff) requests([]queueNode, int) int { return 1 }

func (plainHandoff) watch(ctx context.Context, s *Session, target string, _ []queueNode, _ int) (targetWatch, error) {
	d, err := await(ctx, s.getWAsync(ctx, target))
	return targetWatch{data: d.w, stop: func() {}}, err
}

func (plainHandoff) next(_ predicate, nodes []queueNode, _ int, _ string, _ bool) ([]queueNode, bool) {
	return nodes, true
}

func (plainHandoff) release(ctx context.Context, s *Session, path string, _ bool) error {
	return s.delete(ctx, path)
}

// errStartOver marks a failure after which the acquisition must start
// again from a new node: the session that owned the node ended, or the
// node was deleted under the waiter.
var errStartOver = errors.New("zkrecipes: start over")

type startOver struct{ cause error }

func (e *startOver) Error() string        { return e.cause.Error() }
func (e *startOver) Unwrap() error        { return e.cause }
func (e *startOver) Is(target error) bool { return target == errStartOver }

// acquire runs the queue until the predicate grants the caller, ctx ends,
// or (with try) someone else holds it. After a session loss or the loss of
// its node it starts over under the Session's retry policy. On every
// failure path its node is deleted before it returns (or, when the
// connection is down, in the background).
func (q *queue) acquire(ctx context.Context, data []byte, try bool, onEnd func()) (*hold, error) {
	if q.s.cfg.obs != nil && q.obs.kind != "" {
		return q.acquireObserved(ctx, data, try, onEnd) // observe.go
	}
	return retryStartOver(ctx, q.s, q.s.rel(q.dir), "acquisition", q.passes(ctx, func() (*hold, error) {
		return q.attempt(ctx, data, try, onEnd)
	}))
}

// passes is attempt as retryStartOver runs it: under WithFlapDamping, the
// passes of a damped queue after the first wait for the connection to
// settle, so that a candidate whose session was lost joins again once
// the connection has settled, not at each reconnection of a flapping one.
func (q *queue) passes(ctx context.Context, attempt func() (*hold, error)) func() (*hold, error) {
	first := true
	return func() (*hold, error) {
		if !first && q.damped {
			if err := q.s.settled(ctx); err != nil {
				return nil, err
			}
		}
		first = false
		return attempt()
	}
}

// contender is one pass's own node and what the queue knows of it.
type contender struct {
	node   ownNode
	own    string    // the node's name
	kids   []string  // the children at the last listing
	parent *zk.Stat  // the parent's Stat at the first listing
	self   selfWatch // the node's Stat, token and deletion watch
	waited bool      // some node was ahead of it
}

// attempt is one pass: one node, one session.
func (q *queue) attempt(ctx context.Context, data []byte, try bool, onEnd func()) (h *hold, err error) {
	c, err := q.enqueue(ctx, data)
	if err != nil {
		return nil, err
	}
	defer func() {
		c.self.stop()
		if h == nil {
			q.s.removeNode(c.node)
		}
	}()
	ho := handoffFor(q.fast, !q.noMark)
	for first := true; ; first = false {
		nodes, err := q.sorted(c)
		if err != nil {
			return nil, err
		}
		q.s.notePosition(ctx, first, nodes, c.own) // observe.go
		for relist := false; !relist; {
			held, watch := q.pred(nodes, indexOf(nodes, c.own))
			if held {
				return q.take(ctx, c, ho, onEnd)
			}
			if try {
				return nil, fmt.Errorf("%w: %s", ErrLocked, q.s.rel(q.dir))
			}
			c.waited = true
			marked, err := q.waitFor(ctx, c, ho, nodes, watch)
			if err != nil {
				return nil, err
			}
			nodes, relist = ho.next(q.pred, nodes, watch, c.own, marked)
		}
		if c.kids, err = q.list(ctx, c.node); err != nil {
			return nil, err
		}
	}
}

// enqueue creates the caller's node with the children listed right behind
// the create (see listing.go), or else right after it.
func (q *queue) enqueue(ctx context.Context, data []byte) (*contender, error) {
	node, l, token, err := q.create(ctx, data, plainList)
	if err != nil {
		if errors.Is(err, zk.ErrSessionExpired) {
			return nil, &startOver{err}
		}
		return nil, err
	}
	c := &contender{node: node, own: baseName(node.path), kids: l.kids, parent: l.parent}
	c.self.token = token
	if c.kids == nil {
		if c.kids, c.parent, err = q.listStat(ctx, node); err != nil {
			q.s.removeNode(node)
			return nil, err
		}
	}
	return c, nil
}

// create creates a protected node in the queue, with the children listed
// right behind the create when the wire layer can tell it is on the wire
// (see listing.go), and the node's token when known without reading it
// (0 otherwise). Without that listing, l.kids is nil.
func (q *queue) create(ctx context.Context, data []byte, list lister) (node ownNode, l listing, token int64, err error) {
	if q.s.wire != nil {
		return q.s.createListed(ctx, q.dir, q.name, data, list)
	}
	node, err = q.s.createProtected(ctx, q.dir, q.name, data)
	return node, listing{}, 0, err
}

// sorted sorts the last listing, and fails when another recipe shares the
// path or the caller's node is gone.
func (q *queue) sorted(c *contender) ([]queueNode, error) {
	nodes := sortNodes(c.kids, q.markers)
	if k := conflictingKind(nodes, q.kind); k != "" {
		return nil, fmt.Errorf("%w: %s holds %s nodes; this is a %s", ErrRecipeConflict, q.s.rel(q.dir), k, q.kind)
	}
	if indexOf(nodes, c.own) < 0 {
		return nil, &startOver{lost(ErrNodeDeleted)}
	}
	return nodes, nil
}

// take makes the caller the holder: it settles the node's fencing token,
// confirms the session still stands (grant) and returns the hold.
func (q *queue) take(ctx context.Context, c *contender, ho handoff, onEnd func()) (*hold, error) {
	token, err := q.token(ctx, c)
	if err != nil {
		return nil, err
	}
	epoch, err := q.grant(ctx, c.node)
	if err != nil {
		return nil, err
	}
	h := newHold(q.s, c.node, token, c.self.w, epoch, onEnd)
	h.handoff, h.waited = ho, c.waited
	return h, nil
}

// token is the fencing token of a node about to hold: its czxid when read,
// else the one its listing gave (see listingToken); the node is read now
// when neither is known.
func (q *queue) token(ctx context.Context, c *contender) (int64, error) {
	if err := q.awaitPending(ctx, c.node, &c.self); err != nil {
		return 0, err
	}
	switch {
	case c.self.stat != nil:
		return c.self.stat.Czxid, nil
	case c.self.tokenKnown():
		return c.self.token, nil
	case !c.waited && len(c.kids) == 1:
		return listingToken(c.parent), nil
	}
	if err := q.readSelf(ctx, c.node, &c.self); err != nil {
		return 0, err
	}
	return c.self.stat.Czxid, nil
}

// selfWatch is what a queued node knows of itself: its Stat, once read,
// and the watch that fires on its deletion.
type selfWatch struct {
	stat *zk.Stat
	w    <-chan zk.Event
	// token is the node's fencing token when known without reading the
	// node (its czxid from the create's reply, or listingToken), 0
	// otherwise (neither is ever 0).
	token int64
	// pending brings the reply of a read of the node sent while it waits
	// (see selfwatch.go); cancel withdraws that read if it is not sent yet,
	// and reports whether it did.
	pending <-chan reply[watched]
	cancel  func() bool
}

// tokenKnown reports whether the create's reply or the listing gave the
// node's token.
func (sw *selfWatch) tokenKnown() bool { return sw.token != 0 }

// stop withdraws a read of the node that is not sent yet.
func (sw *selfWatch) stop() {
	if sw.cancel != nil && sw.cancel() {
		sw.pending = nil
	}
	sw.cancel = nil
}

// awaitPending waits for the reply of a read of the own node already sent,
// and withdraws one not sent yet, so that a holder starts with the watch it
// set: the node is found gone, or the read stands.
func (q *queue) awaitPending(ctx context.Context, node ownNode, self *selfWatch) error {
	self.stop()
	for self.pending != nil {
		select {
		case r := <-self.pending:
			if err := q.takePending(ctx, node, self, r); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// takePending takes the reply to a read of the own node sent while it
// waits: it keeps the node's Stat and deletion watch, sends the read again
// after a connection loss under the same session, or says why the queue
// gives up or starts over (the node is gone, say).
func (q *queue) takePending(ctx context.Context, node ownNode, self *selfWatch, r reply[watched]) error {
	self.pending = nil
	if r.err != nil {
		if err := q.classify(ctx, node, r.err); err != nil {
			return err
		}
		self.pending = q.s.watchDeletionAsync(ctx, node.path) // reported under ctx: observe.go
		return nil
	}
	self.stat, self.w = r.v.stat, r.v.w
	return self.checkOwner(node)
}

// checkOwner starts over when the node turns out to belong to another
// session than the one that created it.
func (sw *selfWatch) checkOwner(node ownNode) error {
	if sw.stat != nil && sw.stat.EphemeralOwner != node.gen.id {
		return &startOver{fmt.Errorf("%w: node %s belongs to session 0x%x", ErrSessionChanged, baseName(node.path), sw.stat.EphemeralOwner)}
	}
	return nil
}

// listingToken is the fencing token of a node granted without reading it,
// taken from the listing sent right behind its create: the parent's pzxid
// at that listing. It serves in two cases.
//
//   - Alone: the node was the only child in that listing. Its create set
//     pzxid to its czxid, so the two are equal unless a child created after
//     it was deleted again, or one created before it was deleted, before
//     the listing. pzxid is above every token of an earlier owner (their
//     nodes were deleted before the listing, at or below pzxid) and below
//     every token of a later one (their nodes are created after the
//     listing, above pzxid).
//   - Fresh: no child was created between its create and the listing
//     (noneCreatedSince), whoever else is in it. pzxid is its czxid unless a
//     child was deleted in between. It is above every token of an earlier
//     owner (their nodes were created before this one, and their tokens are
//     their czxid, or the pzxid of a listing made before this node's
//     create) and below every token of a later one (their nodes are created
//     after the listing, above pzxid, and a token is never below its node's
//     czxid).
//
// Semaphore leases take it in the fresh case too: the earlier and later
// leases are those created before and after it.
//
// docs/design-locks.md ("Fencing tokens") explains it.
func listingToken(parent *zk.Stat) int64 { return parent.Pzxid }

// readSelf reads the own node and sets its deletion watch, retrying
// through a connection loss under the same session.
func (q *queue) readSelf(ctx context.Context, node ownNode, self *selfWatch) error {
	for {
		st, w, err := q.s.watchDeletion(ctx, node.path)
		if err == nil {
			self.stat, self.w = st, w
			return self.checkOwner(node)
		}
		if err = q.classify(ctx, node, err); err != nil {
			return err
		}
	}
}

// listStat lists the children with the parent's Stat, retrying through a
// connection loss under the same session.
func (q *queue) listStat(ctx context.Context, node ownNode) ([]string, *zk.Stat, error) {
	for {
		kids, st, err := q.s.childrenStat(ctx, q.dir)
		if err == nil {
			return kids, st, nil
		}
		if err = q.classify(ctx, node, err); err != nil {
			return nil, nil, err
		}
	}
}

// list lists the children, retrying through a connection loss under the
// same session.
func (q *queue) list(ctx context.Context, node ownNode) ([]string, error) {
	for {
		kids, err := q.s.children(ctx, q.dir)
		if err == nil {
			return kids, nil
		}
		if err = q.classify(ctx, node, err); err != nil {
			return nil, err
		}
	}
}

// waitFor waits until nodes[i] is gone, watched as the handoff ho does.
// marked tells that it went in its holder's marked release (see
// handoff.go); a node already gone sets no watch.
func (q *queue) waitFor(ctx context.Context, c *contender, ho handoff, nodes []queueNode, i int) (marked bool, err error) {
	for {
		t, err := q.watch(ctx, c, ho, nodes, i)
		if err == zk.ErrNoNode {
			return false, nil
		}
		if err != nil {
			if err = q.classify(ctx, c.node, err); err != nil {
				return false, err
			}
			continue
		}
		marked, done, err := q.waitRelease(ctx, c, t)
		if err != nil || done {
			return marked, err
		}
	}
}

// targetWatch is a waiter's watch on the node it waits for: a getData
// watch (data), or the verdict of a watch the handoff keeps (marked).
type targetWatch struct {
	data   <-chan zk.Event
	marked <-chan released
	stop   func()
}

// released is the verdict of a handoff's own watch: done when the target
// is gone (marked when in its holder's marked release); fail with the
// failure to classify; neither when the watch must be set again.
type released struct {
	marked, done, fail bool
	err                error
}

// watch sets the waiter's watch on nodes[i] as ho does. The first time,
// unless its token is known, the own node is read beside it (see
// selfwatch.go): the queue waits anyway, so that read adds no round trip.
// An error reading the own node is returned as is, a missing own node as
// ErrNodeDeleted.
func (q *queue) watch(ctx context.Context, c *contender, ho handoff, nodes []queueNode, i int) (targetWatch, error) {
	reqs := ho.requests(nodes, i)
	if c.self.stat != nil || c.self.deferRead(ctx, q.s, c.node) {
		q.s.gather(reqs)
		return q.watchTarget(ctx, ho, nodes, i)
	}
	if err := ctx.Err(); err != nil {
		return targetWatch{}, err
	}
	q.s.gather(1 + reqs)
	sc := q.s.watchDeletionAsync(ctx, c.node.path) // reported under ctx: observe.go
	t, err := q.watchTarget(ctx, ho, nodes, i)
	r, rerr := await(ctx, sc)
	if rerr == nil {
		c.self.stat, c.self.w = r.stat, r.w
		rerr = c.self.checkOwner(c.node)
	} else if rerr == zk.ErrNoNode {
		rerr = lost(ErrNodeDeleted)
	}
	if rerr != nil {
		t.stop()
		return targetWatch{}, rerr
	}
	return t, err
}

// watchTarget sets the watch a waiter needs on nodes[i], as ho does.
func (q *queue) watchTarget(ctx context.Context, ho handoff, nodes []queueNode, i int) (targetWatch, error) {
	if err := ctx.Err(); err != nil {
		return targetWatch{stop: func() {}}, err
	}
	return ho.watch(ctx, q.s, joinPath(q.dir, nodes[i].name), nodes, i)
}

// waitRelease waits on target's watch: done when target is gone (marked
// as above); not done when the watch must be set again.
func (q *queue) waitRelease(ctx context.Context, c *contender, t targetWatch) (marked, done bool, err error) {
	defer t.stop()
	for {
		select {
		case ev := <-t.data:
			switch ev.Type {
			case zk.EventNodeDeleted:
				return false, true, nil
			case zk.EventNotWatching:
				return false, false, q.classify(ctx, c.node, ev.Err)
			}
			return false, false, nil // changed: watch again
		case r := <-t.marked:
			if r.fail {
				return false, false, q.classify(ctx, c.node, r.err)
			}
			return r.marked, r.done, nil
		case r := <-c.self.pending:
			if err := q.takePending(ctx, c.node, &c.self, r); err != nil {
				return false, false, err
			}
		case ev := <-c.self.w:
			if leave, err := q.selfEvent(ctx, c, ev); leave {
				return false, false, err
			}
		case <-c.node.gen.done:
			return false, false, &startOver{c.node.gen.err}
		case <-ctx.Done():
			return false, false, ctx.Err()
		}
	}
}

// selfEvent takes a notification on the own node while waiting: its
// deletion ends the wait; any other change sets the watch again.
func (q *queue) selfEvent(ctx context.Context, c *contender, ev zk.Event) (leave bool, err error) {
	switch ev.Type {
	case zk.EventNodeDeleted:
		return true, q.classify(ctx, c.node, lost(ErrNodeDeleted))
	case zk.EventNotWatching:
		return true, q.classify(ctx, c.node, ev.Err)
	}
	if _, c.self.w, err = q.s.watchDeletion(ctx, c.node.path); err != nil {
		return true, q.classify(ctx, c.node, err)
	}
	return false, nil
}

// grant confirms that the caller's session still stands before it is told
// it holds: when the grant arrives during a connection loss it waits for
// the connection to come back under the same session. It returns the
// ownership epoch the lease lives in.
func (q *queue) grant(ctx context.Context, node ownNode) (*signal, error) {
	for {
		gen, epoch := q.s.current()
		if gen != node.gen || gen.fired() {
			return nil, &startOver{node.gen.err}
		}
		if !epoch.fired() {
			return epoch, nil
		}
		if _, _, err := q.s.awaitConnected(ctx); err != nil {
			return nil, err
		}
	}
}

// classify turns a failure while queued into what to do: nil to retry
// after the connection came back under the same session, a startOver when
// the node's session or node is gone, or the error to return.
func (q *queue) classify(ctx context.Context, node ownNode, err error) error {
	return q.s.classify(ctx, node, q.dir, err)
}

// classify is queue.classify for a failure on the path dir (its error
// names dir) tied to node's session.
func (s *Session) classify(ctx context.Context, node ownNode, dir string, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrClosed) || errors.Is(err, zk.ErrClosing):
		return ErrClosed
	case errors.Is(err, ErrNodeDeleted) || err == zk.ErrNoNode:
		return &startOver{lost(ErrNodeDeleted)}
	case errors.Is(err, zk.ErrSessionExpired) || node.gen.fired():
		return &startOver{lost(ErrSessionExpired)}
	case isRetryable(err):
		gen, _, werr := s.awaitConnected(ctx)
		if werr != nil {
			return werr
		}
		if gen != node.gen {
			return &startOver{lost(ErrSessionChanged)}
		}
		return nil
	}
	return fmt.Errorf("zkrecipes: %s: %w", s.rel(dir), err)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
