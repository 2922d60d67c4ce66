package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Election is leader election among the processes that campaign on one
// path: at most one participant leads at a time while no fault occurs, and
// when the leader resigns, dies or loses its session the next participant in
// line takes over. It is wire-compatible with Curator: with the default
// LatchLayout a Curator LeaderLatch, and with SelectorLayout a Curator
// LeaderSelector, on the same path takes part in the same election.
//
// Campaign returns a Lease like every other acquisition: Done closes the
// moment leadership is lost or in doubt (from SUSPENDED on, under the
// default LoseOnSuspended policy), and Token is the leadership epoch: it
// strictly increases from one leader to the next, so a resource that
// rejects writes with an epoch lower than the highest it has seen cannot be
// written by a deposed leader. A participant declares leadership only once
// its node is confirmed to belong to its current ZooKeeper session
// (CURATOR-696), and, when its session survives a connection loss
// (LoseOnLost), confirms it again after every RECONNECTED.
//
// An Election is one participant: Campaign calls on it are serialised, and
// Campaign while it leads returns the current Lease. Subscribe, Leader and
// Participants may be called by any process, campaigning or not.
//
// NewElection does no I/O. An Election is safe for concurrent use.
type Election struct {
	s    *Session
	path string
	err  error
	cfg  electionConfig
	q    queue

	turn chan struct{} // serialises Campaign

	mu    sync.Mutex
	lease *Lease // current leadership, nil when not leading

	// afterConfirm, if set, runs once a leadership is confirmed, before
	// Campaign declares it: a seam for tests only, which pause there.
	afterConfirm func(*hold)
}

// ElectionLayout selects the node layout, and with it the Curator recipe an
// Election interoperates with.
type ElectionLayout int

const (
	// LatchLayout is Curator's LeaderLatch: each participant creates
	// P/_c_<uuid>-latch-<seq> holding its participant id; the first in
	// sequence order leads. The default.
	LatchLayout ElectionLayout = iota
	// SelectorLayout is Curator's LeaderSelector: a mutex on P
	// (P/_c_<uuid>-lock-<seq>) whose node data is the participant id. A
	// Mutex on the same path contends for the same leadership.
	SelectorLayout
)

func (l ElectionLayout) String() string {
	switch l {
	case LatchLayout:
		return "LatchLayout"
	case SelectorLayout:
		return "SelectorLayout"
	}
	return fmt.Sprintf("ElectionLayout(%d)", int(l))
}

// ElectionOption configures NewElection. WithName is one too.
type ElectionOption interface{ applyElection(*electionConfig) }

// electionOpt is an ElectionOption that only an Election takes.
type electionOpt func(*electionConfig)

func (o electionOpt) applyElection(c *electionConfig) { o(c) }

type electionConfig struct {
	id       string
	layout   ElectionLayout
	proclaim bool   // Proclaim allowed in LatchLayout
	name     string // WithName (observe.go)
	err      error
}

// WithParticipantID sets the participant id stored in the participant's
// node (as UTF-8), which Leader, Subscribe and Participants report and which
// Curator's getId/getLeader read. An id that makes the node's create
// request larger than the Session's limit (WithMaxRequestSize: a little
// under 1 MiB by default) makes every method of the Election fail with
// ErrDataTooLarge. Default: "<hostname>-<pid>".
func WithParticipantID(id string) ElectionOption {
	return electionOpt(func(c *electionConfig) { c.id = id })
}

// WithProclaim(true) allows Election.Proclaim in LatchLayout, where it is off by
// default: by passing it the caller promises that no Curator LeaderLatch
// campaigns on the path. A Curator LeaderLatch waiting directly behind a
// leader that proclaims stops watching it (Curator 5.4 to 5.8 act on the
// node's deletion only) and would not take over when the leader goes.
// In SelectorLayout Proclaim needs no option.
func WithProclaim(on bool) ElectionOption {
	return electionOpt(func(c *electionConfig) { c.proclaim = on })
}

// WithLayout sets the node layout: LatchLayout (the default) or
// SelectorLayout.
func WithLayout(l ElectionLayout) ElectionOption {
	return electionOpt(func(c *electionConfig) {
		if l != LatchLayout && l != SelectorLayout {
			c.err = invalidArg("unknown election layout %d", int(l))
			return
		}
		c.layout = l
	})
}

// Sort markers of a leader latch: Curator sorts its children by the text
// after the last "latch-".
var latchMarkers = []string{"latch-"}

// NewElection returns an election on path (relative to the Session's
// namespace). It does no I/O; an invalid path, a nil session, a bad option
// or a participant id too large (ErrDataTooLarge) is reported by every
// method of the Election.
func NewElection(s *Session, path string, opts ...ElectionOption) *Election {
	e := &Election{s: s, path: path, turn: make(chan struct{}, 1)}
	e.cfg = electionConfig{id: defaultParticipantID()}
	for _, o := range opts {
		if o == nil {
			e.err = invalidArg("nil ElectionOption")
			return e
		}
		o.applyElection(&e.cfg)
	}
	if e.err = e.cfg.err; e.err == nil {
		e.err = checkRecipe(s, path)
	}
	if e.err != nil {
		return e
	}
	// Every node of both layouts is sequential, so a waiter may trust its
	// first listing (fast handoff): nodes created later, Curator's included
	// (a LeaderLatch that resets creates a new sequential node), sort after
	// it.
	// A latch releases with a plain delete (see queue.noMark): a data
	// change would make Curator's LeaderLatch stop watching.
	e.q = queue{s: s, dir: s.abs(path), driver: driver{name: "latch-", markers: latchMarkers, kind: kindLatch,
		pred: maxLeasesPredicate(1), fast: true, noMark: true}}
	if e.cfg.layout == SelectorLayout {
		// Curator's LeaderSelector is an InterProcessMutex, whose waiters
		// re-read on any event: the marked release is safe there.
		e.q.driver = mutexDriver(true)
	}
	e.q.damped = true
	e.q.obs = observed{KindElection, e.cfg.name}
	e.err = s.checkNodeData(path, []byte(e.cfg.id), protectedNode(e.q.dir, e.q.name))
	return e
}

func defaultParticipantID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = localAddress()
	}
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}

// Path returns the election's path, as given to NewElection.
func (e *Election) Path() string { return e.path }

// ID returns the participant id this Election campaigns with.
func (e *Election) ID() string { return e.cfg.id }

// Campaign blocks until this participant leads or ctx ends, and returns the
// leadership as a Lease: watch its Done, and use its Token as the
// leadership epoch. If this Election already leads, it returns the current
// Lease at once. When the session expires while waiting, the campaign
// starts over on the next session under the Session's retry policy, and
// fails with an error matching ErrRetriesExhausted when the policy gives
// up. With WithFlapDamping, while the Session damps connection flaps it
// waits (within ctx) for the connection to settle before it joins the
// election. On cancel, deadline or any error the participant's node is
// deleted (in the background if the connection is down) and the error
// returned: ctx's error (named as Mutex.Acquire names it), ErrClosed,
// ErrRecipeConflict, or a ZooKeeper error.
func (e *Election) Campaign(ctx context.Context) (_ *Lease, err error) {
	if e.err != nil {
		return nil, e.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	defer func() { err = e.s.waitFailed(ctx, "campaign for "+e.path, err) }()
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.turn }()
	if l := e.current(); l != nil {
		return l, nil
	}
	bo := e.s.cfg.retry()
	for {
		var h *hold
		onEnd := func() {
			e.mu.Lock()
			if e.lease != nil && e.lease.h == h {
				e.lease = nil
			}
			e.mu.Unlock()
		}
		// WithFlapDamping: after a suspension, join once the connection
		// has settled, not at each reconnection of a flapping one.
		if err := e.s.settled(ctx); err != nil {
			return nil, err
		}
		nh, err := e.q.acquire(ctx, []byte(e.cfg.id), false, onEnd)
		if err != nil {
			return nil, err
		}
		l := &Lease{h: nh}
		e.mu.Lock()
		h = nh
		e.lease = l
		e.mu.Unlock()
		cancelGuard := e.guard(l)
		err = e.confirm(ctx, nh)
		if err == nil {
			if e.afterConfirm != nil {
				e.afterConfirm(nh)
			}
			err = declare(nh)
		}
		if err == nil {
			return l, nil
		}
		cancelGuard()
		var so *startOver
		if !errors.As(err, &so) {
			e.abandon(l)
			return nil, err
		}
		e.abandon(l)
		e.s.cfg.log.Info("zkrecipes: leadership not confirmed; campaign starts over", "path", e.q.dir, "err", so.cause)
		d := bo.NextBackOff()
		if d == Stop {
			return nil, fmt.Errorf("%w: %s: %w", ErrRetriesExhausted, e.path, so.cause)
		}
		if err := sleepCtx(ctx, d); err != nil {
			return nil, err
		}
	}
}

// current returns the Lease of the leadership this Election holds, if any.
func (e *Election) current() *Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lease != nil && e.lease.Err() == nil {
		return e.lease
	}
	return nil
}

// abandon releases a leadership the caller will never see.
func (e *Election) abandon(l *Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = l.Release(ctx)
}

// confirm reads the participant's node back before leadership is declared:
// the read succeeding proves the session was alive on the server after the
// predecessor left, and the node must still exist and belong to the
// session the queue granted it under (CURATOR-696).
func (e *Election) confirm(ctx context.Context, h *hold) error {
	for {
		select {
		case <-h.sig.done:
			return &startOver{h.sig.err}
		default:
		}
		_, st, err := e.s.get(ctx, h.node.path)
		switch {
		case err == nil && st.EphemeralOwner == h.node.gen.id:
			return nil
		case err == nil:
			return &startOver{lost(fmt.Errorf("%w: node %s belongs to session 0x%x, not 0x%x",
				ErrSessionChanged, baseName(h.node.path), st.EphemeralOwner, h.node.gen.id))}
		case err == zk.ErrNoNode:
			return &startOver{lost(ErrNodeDeleted)}
		case ctx.Err() != nil:
			return ctx.Err()
		case isRetryable(err):
			if _, _, werr := e.s.awaitConnected(ctx); werr != nil {
				return werr
			}
		default:
			return fmt.Errorf("zkrecipes: %s: confirm leadership: %w", e.path, err)
		}
	}
}

// declare is the last check before Campaign returns a leadership: one
// lost while the confirming read was on its way (the connection dropped
// right behind its reply, say) is not declared, and the campaign starts
// over. Declared, it would reach its caller already ended, with a token
// below that of the next leader, which may be granted before the caller
// looks at it.
func declare(h *hold) error {
	select {
	case <-h.sig.done:
		return &startOver{h.sig.err}
	default:
		return nil
	}
}

// guard checks the leadership again after every RECONNECTED, until it
// ends: under LoseOnLost a lease survives a connection loss, and the node
// may have been deleted or the session replaced meanwhile. It returns a
// function that stops it early.
func (e *Election) guard(l *Lease) func() {
	states, cancel := e.s.subscribe()
	stop := make(chan struct{})
	var once sync.Once
	e.s.opsMu.RLock()
	if e.s.isClosed() {
		e.s.opsMu.RUnlock()
		cancel()
		return func() {}
	}
	e.s.wg.Add(1)
	e.s.opsMu.RUnlock()
	go func() {
		defer e.s.wg.Done()
		defer cancel()
		for {
			select {
			case <-l.h.sig.done:
				return
			case <-stop:
				return
			case c, ok := <-states:
				if !ok {
					return
				}
				if c.State == StateReconnected {
					e.reverify(l.h, stop)
				}
			}
		}
	}()
	return func() { once.Do(func() { close(stop) }) }
}

// reverify ends the leadership if its node is gone or no longer belongs
// to the current session.
func (e *Election) reverify(h *hold, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.sig.done:
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	err := e.confirm(ctx, h)
	var so *startOver
	if errors.As(err, &so) {
		h.lose(so.cause, true)
	}
}

// Resign gives up the leadership this Election holds, deleting its node so
// that the next participant takes over at once. It returns nil when this
// Election does not lead, and otherwise what Lease.Release returns.
func (e *Election) Resign(ctx context.Context) error {
	if e.err != nil {
		return e.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	e.mu.Lock()
	l := e.lease
	e.mu.Unlock()
	if l == nil {
		return nil
	}
	if err := l.Release(ctx); err != nil && !errors.Is(err, ErrReleased) {
		return err
	}
	return nil
}

// Leader returns the current leader as its node shows it: the first
// participant in line. It returns an error matching ErrNoLeader when nobody
// campaigns, and fails with ctx's error, ErrClosed or a ZooKeeper error.
// The answer may be stale by the time it arrives; only a Lease tells a
// participant that it leads.
func (e *Election) Leader(ctx context.Context) (Participant, error) {
	ps, err := e.Participants(ctx)
	if err != nil {
		return Participant{}, err
	}
	if len(ps) == 0 {
		return Participant{}, fmt.Errorf("%w: %s", ErrNoLeader, e.path)
	}
	return ps[0], nil
}

// Participants lists every participant, the leader first (Holder set),
// then the others in line. Data is each participant's id. It fails with
// ctx's error, ErrClosed or a ZooKeeper error; a path that does not exist
// yet has no participants.
func (e *Election) Participants(ctx context.Context) ([]Participant, error) {
	if e.err != nil {
		return nil, e.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	return e.s.participants(ctx, e.q.dir, e.q.markers, firstHolds(1))
}
