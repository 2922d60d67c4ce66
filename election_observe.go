package zkrecipes

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// LeaderChange is one change of leadership seen by Election.Subscribe.
type LeaderChange struct {
	// Leader is the new leader (Holder set); the zero Participant when
	// HasLeader is false.
	Leader Participant
	// HasLeader is false when nobody campaigns any more.
	HasLeader bool
	// At is when the change was observed.
	At time.Time
}

// observePoll is how often Observe looks for an election path that does
// not exist and that it may not create: waiting for its creation would need
// an exists watch, which stays on the server for as long as the path is
// missing.
const observePoll = time.Second

// observeRetry is the pause before Observe retries after a lost connection.
const observeRetry = 100 * time.Millisecond

// Subscribe reports leadership changes on the election's path: first the
// current state, then one LeaderChange each time the first participant in
// line changes (another node leads, or nobody campaigns any more) or the
// leader's data changes (Proclaim). It watches the path's children and the
// leader's node, one watch of each at a time, and reconnects through
// connection losses, reporting the state it finds after each. A slow reader
// is never sent a backlog: it receives the latest state when it reads
// again. When the path does not exist, Subscribe creates it (and its
// parents) as container nodes, as a campaign would, so that it has a node
// to watch (and deletes it again on the way out if nobody ever campaigned
// on it); where the ACL forbids that, it looks again every second. The
// channel is closed when ctx ends or the Session is closed. It
// fails at once, with no channel, on an invalid Election or a nil ctx, and
// with ErrClosed after the Session's Close.
func (e *Election) Subscribe(ctx context.Context) (<-chan LeaderChange, error) {
	if e.err != nil {
		return nil, e.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	out := make(chan LeaderChange)
	e.s.opsMu.RLock()
	if e.s.isClosed() {
		e.s.opsMu.RUnlock()
		return nil, ErrClosed
	}
	e.s.wg.Add(1)
	e.s.opsMu.RUnlock()
	go func() {
		defer e.s.wg.Done()
		defer close(out)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-e.s.closedCh:
				cancel()
			case <-ctx.Done():
			}
		}()
		e.observe(ctx, out)
	}()
	return out, nil
}

// Observe is Subscribe.
//
// Deprecated: use Subscribe, the name every recipe that many listen to
// uses (Session.Subscribe).
func (e *Election) Observe(ctx context.Context) (<-chan LeaderChange, error) { return e.Subscribe(ctx) }

func (e *Election) observe(ctx context.Context, out chan<- LeaderChange) {
	o := &observer{e: e, out: out}
	created := false
	defer func() {
		if created {
			e.dropPath()
		}
	}()
	for ctx.Err() == nil {
		kids, w, err := e.s.childrenW(ctx, e.q.dir)
		switch {
		case err == zk.ErrNoNode:
			// Create the path, as a campaign would, to have a node to watch.
			cerr := e.s.ensureParents(ctx, e.q.dir)
			if cerr == nil {
				created = true
				e.s.dropOnClose(e.q.dir)
				continue
			}
			if ctx.Err() != nil {
				return
			}
			e.s.cfg.log.Warn("zkrecipes: cannot create the election path to observe it; polling", "path", e.q.dir, "err", cerr)
			kids, w = nil, nil
		case err != nil:
			if !e.awaitRetry(ctx, err) {
				return
			}
			continue
		}
		if !o.follow(ctx, kids, w) {
			return
		}
	}
}

// observer is the state of one Observe: what it last reported, and the
// data watch on the leader's node, so that a new value the leader
// proclaims is reported too. Only one data watch is pending at a time:
// the leader's node is read again only when its watch has fired or
// another node leads. A data watch left behind when Observe ends fires,
// and goes, with the node's next change or its deletion.
type observer struct {
	e      *Election
	out    chan<- LeaderChange
	last   LeaderChange
	sent   bool
	dw     <-chan zk.Event // data watch on the node dwNode
	dwNode string
}

// follow reports the leader among kids, and again each time its node's data
// changes, until the children change (w fires; with no w, after a poll
// interval) or the leader's node is gone. It returns false when Observe
// must stop.
func (o *observer) follow(ctx context.Context, kids []string, w <-chan zk.Event) bool {
	e := o.e
	for {
		ch, ok, err := o.leaderOf(ctx, kids)
		if err != nil {
			return e.awaitRetry(ctx, err)
		}
		if !ok {
			// The first node went between the listing and the read: list
			// again (the children watch will fire anyway).
			return true
		}
		if !o.sent || ch.HasLeader != o.last.HasLeader || ch.Leader.Node != o.last.Leader.Node ||
			!bytes.Equal(ch.Leader.Data, o.last.Leader.Data) {
			select {
			case o.out <- ch:
			case <-ctx.Done():
				return false
			}
			o.sent, o.last = true, ch
		}
		if w == nil {
			return sleepCtx(ctx, observePoll) == nil
		}
		select {
		case <-w:
			return true
		case <-o.dw:
			o.dw = nil // read the leader's node again
		case <-ctx.Done():
			return false
		}
	}
}

// leaderOf reads the first of kids, with a data watch, unless it is the
// node last read and its data watch has not fired; ok is false when it is
// already gone.
func (o *observer) leaderOf(ctx context.Context, kids []string) (LeaderChange, bool, error) {
	e := o.e
	now := time.Now()
	nodes := sortNodes(kids, e.q.markers)
	if len(nodes) == 0 {
		return LeaderChange{At: now}, true, nil
	}
	if o.dw != nil && o.dwNode == nodes[0].name {
		select {
		case <-o.dw:
			o.dw = nil
		default:
			return o.last, true, nil // unchanged since read
		}
	}
	data, st, dw, err := e.s.getW(ctx, joinPath(e.q.dir, nodes[0].name))
	if err == zk.ErrNoNode {
		return LeaderChange{}, false, nil
	}
	if err != nil {
		return LeaderChange{}, false, err
	}
	o.dw, o.dwNode = dw, nodes[0].name
	p := Participant{Node: nodes[0].name, Data: data, SessionID: st.EphemeralOwner, Token: st.Czxid,
		Created: time.UnixMilli(st.Ctime), Holder: true}
	return LeaderChange{Leader: p, HasLeader: true, At: now}, true, nil
}

// awaitRetry waits until an observer can try again after err: false when
// it must stop (ctx ended, Session closed).
func (e *Election) awaitRetry(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, ErrClosed) || errors.Is(err, zk.ErrClosing) {
		return false
	}
	if isRetryable(err) || errors.Is(err, zk.ErrSessionExpired) {
		// The Session may not have seen the disconnect yet: pause before
		// asking it whether it is connected.
		if sleepCtx(ctx, observeRetry) != nil {
			return false
		}
		_, _, werr := e.s.awaitConnected(ctx)
		return werr == nil
	}
	e.s.cfg.log.Warn("zkrecipes: observing leadership, will retry", "path", e.q.dir, "err", err)
	return sleepCtx(ctx, observePoll) == nil
}

// dropPath deletes the election path an observer created, if it is still
// empty: ZooKeeper removes a container node only once it has had children,
// so a path created for observing that nobody campaigned on would stay
// forever. A path with participants is left alone (the delete fails with
// NotEmpty), and a campaign that races the delete creates the path again.
// Nothing is deleted once the Session is closed.
func (e *Election) dropPath() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	st, err := e.s.exists(ctx, e.q.dir)
	if err == nil && neverUsed(st) {
		err = e.s.delete(ctx, e.q.dir)
	}
	if err == nil || err == zk.ErrNoNode {
		e.s.keep(e.q.dir) // settled; otherwise Close tries again
	}
}
