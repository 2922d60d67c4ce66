package zkrecipes

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// LeaderChange is one change of leadership seen by Election.Observe.
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

// Observe reports leadership changes on the election's path: first the
// current state, then one LeaderChange each time the first participant in
// line changes (another node leads, or nobody campaigns any more). It
// watches the path's children, one watch at a time, and reconnects through
// connection losses, reporting the state it finds after each. A slow reader
// is never sent a backlog: it receives the latest state when it reads
// again. When the path does not exist, Observe creates it (and its
// parents) as container nodes, as a campaign would, so that it has a node
// to watch (and deletes it again on the way out if nobody ever campaigned
// on it); where the ACL forbids that, it looks again every second. The
// channel is closed when ctx ends or the Session is closed. It
// fails at once, with no channel, on an invalid Election or a nil ctx.
func (e *Election) Observe(ctx context.Context) (<-chan LeaderChange, error) {
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

func (e *Election) observe(ctx context.Context, out chan<- LeaderChange) {
	var last string
	first, created := true, false
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
		ch, ok, err := e.leaderOf(ctx, kids)
		if err != nil {
			if !e.awaitRetry(ctx, err) {
				return
			}
			continue
		}
		if !ok {
			// The first node went between the listing and the read: list
			// again (the children watch will fire anyway).
			continue
		}
		if first || ch.Leader.Node != last {
			select {
			case out <- ch:
			case <-ctx.Done():
				return
			}
			first, last = false, ch.Leader.Node
		}
		if w == nil {
			if sleepCtx(ctx, observePoll) != nil {
				return
			}
			continue
		}
		select {
		case <-w:
		case <-ctx.Done():
			return
		}
	}
}

// leaderOf reads the first of kids; ok is false when it is already gone.
func (e *Election) leaderOf(ctx context.Context, kids []string) (LeaderChange, bool, error) {
	now := time.Now()
	nodes := sortNodes(kids, e.q.markers)
	if len(nodes) == 0 {
		return LeaderChange{At: now}, true, nil
	}
	data, st, err := e.s.get(ctx, joinPath(e.q.dir, nodes[0].name))
	if err == zk.ErrNoNode {
		return LeaderChange{}, false, nil
	}
	if err != nil {
		return LeaderChange{}, false, err
	}
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
