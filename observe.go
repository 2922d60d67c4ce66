package zkrecipes

import (
	"context"
	"errors"
	"math/bits"
	"time"

	seam "github.com/zkrecipes/zkrecipes/internal/hooks"
)

// Observer sees what a Session's recipes do: every ZooKeeper request, every
// acquisition (lock, read-write lock, semaphore, election) from start to
// grant or failure, the end of every lease granted and why it ended, the
// Session's state changes, and the loads and resyncs of caches (package
// discovery also tells an Observer that implements its
// discovery.InstancesObserver of the instances it sees). It is the hook a metrics or tracing
// adapter plugs into (the OpenTelemetry one is the module
// github.com/zkrecipes/zkrecipes/otelzk); set it with WithObserver.
//
// Methods are called synchronously from the goroutine doing the work, some
// with the Session's internal locks held: they must be safe for concurrent
// use, return quickly, never block, and never call the Session or its
// recipes, except that StateChanged may call State, SessionID, Done and
// Err. A method that takes a ctx gets the caller's ctx where there is
// one (the ctx of Acquire, Campaign, Release; the ctx an operation was
// issued under; for every request of an acquisition, its wait loop's
// included, the ctx AcquireStart returned) and context.Background()
// otherwise: a lease lost in the background, a request the recipe sends on
// its own for no caller (a cache's reads, a keeper's writes, a held
// lease's watch, the clean-up of a node given up).
//
// Events carry a RecipeInfo whose Name is meant for metric attributes and
// whose Path is not (a lock per entity makes paths unbounded).
//
// Embed BaseObserver in an implementation so that methods added to
// Observer later keep it compiling.
type Observer interface {
	// OpDone is called after each ZooKeeper request a recipe issues, with
	// its reply or failure.
	OpDone(ctx context.Context, ev OpEvent)
	// AcquireStart is called when an acquisition starts. The ctx it
	// returns (ctx, or one derived from it: a span's, say) is the one the
	// acquisition's own requests run under and the one AcquireEnd gets.
	AcquireStart(ctx context.Context, ev AcquireStartEvent) context.Context
	// AcquireEnd is called once per AcquireStart when the acquisition is
	// granted (Err nil) or fails.
	AcquireEnd(ctx context.Context, ev AcquireEndEvent)
	// LeaseEnd is called once per granted acquisition when its ownership
	// ends: released, revoked then released, or lost.
	LeaseEnd(ctx context.Context, ev LeaseEndEvent)
	// StateChanged is called on each transition of the Session's
	// ConnState, one call at a time and in order, with no lock of the
	// Session held, on goroutines that deliver the connection's events:
	// it may call State, SessionID, Done and Err; it must not block, call
	// Close (which waits for it), or call the recipes (which may wait for
	// the connection it is holding up). StateClosed is reported before
	// Close returns.
	StateChanged(ev StateChange)
	// CacheSynced is called when a cache has read its whole tree (a
	// NodeCache: its node): first loaded, or resynced after a
	// reconnection or a watch reset.
	CacheSynced(ev CacheSyncEvent)
	// CacheBacklog is called when the events a cache holds for its reader
	// cross a power of two from 32 up, either way, and with 0 once they
	// are all delivered after such a report.
	CacheBacklog(ev CacheBacklogEvent)
	// FlapDamped is called for each connection flap that flap damping
	// absorbed (WithFlapDamping), right after the StateChanged call of its
	// suspension, with the same guarantees and limits as StateChanged.
	FlapDamped(ev FlapEvent)
}

// BaseObserver implements Observer with methods that do nothing (its
// AcquireStart returns ctx). Embed it to implement only some methods.
type BaseObserver struct{}

// OpDone does nothing.
func (BaseObserver) OpDone(context.Context, OpEvent) {}

// AcquireStart returns ctx.
func (BaseObserver) AcquireStart(ctx context.Context, _ AcquireStartEvent) context.Context {
	return ctx
}

// AcquireEnd does nothing.
func (BaseObserver) AcquireEnd(context.Context, AcquireEndEvent) {}

// LeaseEnd does nothing.
func (BaseObserver) LeaseEnd(context.Context, LeaseEndEvent) {}

// StateChanged does nothing.
func (BaseObserver) StateChanged(StateChange) {}

// CacheSynced does nothing.
func (BaseObserver) CacheSynced(CacheSyncEvent) {}

// CacheBacklog does nothing.
func (BaseObserver) CacheBacklog(CacheBacklogEvent) {}

// FlapDamped does nothing.
func (BaseObserver) FlapDamped(FlapEvent) {}

// Recipe kinds an Observer sees in RecipeInfo.Kind.
const (
	KindMutex     = "mutex"
	KindReadLock  = "rwlock.read"
	KindWriteLock = "rwlock.write"
	KindSemaphore = "semaphore"
	// KindElection: a granted acquisition is leadership gained, its
	// LeaseEnd leadership lost.
	KindElection  = "election"
	KindTreeCache = "treecache"
	// KindDiscovery: a discovery ServiceCache (its cache reports this
	// kind too, see WithCacheKind).
	KindDiscovery   = "discovery"
	KindNodeCache   = "nodecache"
	KindGroupMember = "groupmember" // GroupMember's view of the group
)

// RecipeInfo names the recipe an event is about.
type RecipeInfo struct {
	Kind string // one of the Kind constants
	// Name is the recipe's low-cardinality name for metrics: the one given
	// with WithName, else what the Session's
	// WithPathNames function returns for Path, else "".
	Name string
	// Path is the recipe's path, relative to the Session's namespace. It
	// is unbounded (a lock per entity): keep it out of metric attributes.
	Path string
}

// OpEvent is one ZooKeeper request.
type OpEvent struct {
	Op string // "create", "delete", "getData", "getChildren", "exists", "multi", ...
	// Name is what the Session's WithPathNames function returns for Path,
	// "" without one.
	Name      string
	Path      string        // relative to the namespace; unbounded
	Start     time.Time     // when it was sent
	Latency   time.Duration // from send to reply
	Err       error         // nil on success
	SessionID int64         // the ZooKeeper session it was sent on

	abs string // the absolute path, for a Tracer (trace.go)
}

// AcquireStartEvent starts an acquisition.
type AcquireStartEvent struct {
	Recipe RecipeInfo
	Try    bool // TryAcquire: fails at once rather than wait
	N      int  // leases asked for (a Semaphore); 1 otherwise
	// Reentrant: the goroutine already holds the lock and gets a new lease
	// on its hold at once, with no request; the hold's end is reported
	// once, by one LeaseEnd, whatever the number of its leases.
	Reentrant bool
	// Downgrade: the holder of an RWMutex's write lock takes its read
	// lock, which is granted without queueing (if the write lock turns out
	// to be gone meanwhile, it queues as any reader, within the same
	// acquisition).
	Downgrade bool
}

// AcquireEndEvent ends an acquisition: granted when Err is nil.
type AcquireEndEvent struct {
	Recipe    RecipeInfo
	Try       bool
	N         int
	Reentrant bool // as in AcquireStartEvent: granted at once, no new hold
	Downgrade bool // as in AcquireStartEvent
	// Wait is the time from AcquireStart to the grant or failure.
	Wait time.Duration
	// Attempts counts the passes: more than 1 when the acquisition started
	// over (its session expired, its node was deleted); 0 for a reentrant
	// acquisition.
	Attempts int
	// Position is the number of contenders ahead of the caller's node at
	// the first listing of the last pass (0: at the head, or a downgrade);
	// -1 if unknown (a Semaphore, a failure before the listing, a
	// reentrant acquisition).
	Position int
	Token    int64 // the lease's fencing token when granted (the first, for a Semaphore)
	Err      error // why it failed: ctx's error, ErrLocked, ErrClosed, ...
}

// EndCause says why a lease ended (LeaseEndEvent.Cause).
type EndCause string

// Causes of a lease's end. Every cause but EndReleased is a loss of
// ownership the holder did not ask for (EndRevoked: released after another
// process asked for it, see Revoke).
const (
	EndReleased       EndCause = "released"
	EndRevoked        EndCause = "revoked"
	EndSuspended      EndCause = "suspended"       // ErrSuspended
	EndExpired        EndCause = "expired"         // ErrSessionExpired, presumed or told
	EndSessionChanged EndCause = "session_changed" // ErrSessionChanged
	EndDeleted        EndCause = "deleted"         // ErrNodeDeleted
	EndLeaseTime      EndCause = "lease_time"      // ErrLeaseExpired
	EndClosed         EndCause = "closed"          // ErrClosed
	EndOther          EndCause = "other"
)

// LeaseEndEvent ends a granted lease.
type LeaseEndEvent struct {
	Recipe RecipeInfo
	Held   time.Duration // from the grant to the end
	Cause  EndCause
	Err    error // ErrReleased, or the loss (matching ErrLockLost)
	Token  int64
}

// CacheSyncEvent reports a cache that has read its whole tree.
type CacheSyncEvent struct {
	Recipe  RecipeInfo
	Initial bool // the first load; false for a resync after a reconnection
	Nodes   int  // nodes the cache holds
	Backlog int  // events queued and not yet delivered to the reader
}

// CacheBacklogEvent reports the events a cache holds for its reader.
type CacheBacklogEvent struct {
	Recipe  RecipeInfo
	Backlog int // events queued and not yet delivered to the reader
}

// WithObserver sets the Observer that sees the Session's recipes at work.
// A Session without one reports nothing and pays one nil check per hook.
// Default: none.
func WithObserver(o Observer) SessionOption {
	return func(c *sessionConfig) {
		if o == nil {
			c.fail(invalidArg("nil observer"))
			return
		}
		c.obs = o
	}
}

// WithPathNames sets the function that gives each recipe and each request
// the Name an Observer reports (RecipeInfo.Name, OpEvent.Name): it gets a
// path relative to the namespace and should map the unbounded set of paths
// to a few names ("/locks/order-1234" to "order-lock", say). It runs once
// per acquisition, cache sync or request while an Observer is set, must
// be safe for concurrent use and must not block. A recipe's own name
// (WithName) takes precedence. Default: none (Name
// is "").
func WithPathNames(f func(path string) string) SessionOption {
	return func(c *sessionConfig) {
		if f == nil {
			c.fail(invalidArg("nil path naming function"))
			return
		}
		c.names = f
	}
}

// Option is an option that every named recipe takes: a LockOption (Mutex,
// RWMutex, SemaphoreMutex, Semaphore), an ElectionOption, a
// TreeCacheOption (TreeCache, NodeCache) and a GroupMemberOption. WithName
// is the one. Recipe options are interfaces, as franz-go's kgo.Opt is, so
// that one option value serves every recipe it applies to.
type Option interface {
	LockOption
	ElectionOption
	TreeCacheOption
	GroupMemberOption
}

// WithName sets the name the Session's Observer reports for this recipe
// (RecipeInfo.Name: in its acquisitions, leases, cache syncs and
// backlogs), instead of the one the Session's WithPathNames function
// gives. It applies to every recipe an Observer sees by name: the locks
// and semaphores, elections, TreeCache, NodeCache and GroupMember (its
// view of the group). Keep it low-cardinality: it is meant for metric
// attributes. Default: none.
func WithName(name string) Option { return nameOpt(name) }

type nameOpt string

func (n nameOpt) applyLock(c *lockConfig)               { c.name = string(n) }
func (n nameOpt) applySemaphore(c *semConfig)           { c.lock.name = string(n) }
func (n nameOpt) applyElection(c *electionConfig)       { c.name = string(n) }
func (n nameOpt) applyCache(c *treeConfig)              { c.name = string(n) }
func (n nameOpt) applyGroupMember(c *groupMemberConfig) { c.name = string(n) }

// WithLockName is WithName for a lock or semaphore.
//
// Deprecated: use WithName, which every named recipe takes.
func WithLockName(name string) LockOption { return WithName(name) }

// WithElectionName is WithName for an election.
//
// Deprecated: use WithName, which every named recipe takes.
func WithElectionName(name string) ElectionOption { return WithName(name) }

// recipeInfo returns the RecipeInfo of a recipe of the given kind on path
// (relative to the namespace), named name or else by the Session's
// WithPathNames function.
func (s *Session) recipeInfo(kind, name, path string) RecipeInfo {
	if name == "" && s.cfg.names != nil {
		name = s.cfg.names(path)
	}
	return RecipeInfo{Kind: kind, Name: name, Path: path}
}

// The seam package discovery reports through (internal/hooks): the
// Observer the user gave, the RecipeInfo of one of its recipes, and the
// cache kind its TreeCache reports.
func init() {
	seam.Observer = func(s any) any {
		if ss, _ := s.(*Session); ss != nil {
			if o := userObserver(ss.cfg.obs); o != nil {
				return o
			}
		}
		return nil
	}
	seam.RecipeInfo = func(s any, kind, name, path string) any {
		return s.(*Session).recipeInfo(kind, name, path)
	}
	seam.CacheKind = func(kind string) any { return withCacheKind(kind) }
}

// observed is what a queue reports itself as; kind "" reports nothing (a
// Semaphore's inner mutex: the Semaphore reports).
type observed struct{ kind, name string }

// holdObs is what an observed hold reports at its end.
type holdObs struct {
	info    RecipeInfo
	granted time.Time
}

// acqProbe collects, during one observed acquisition, what AcquireEnd
// reports; it rides on the acquisition's ctx.
type acqProbe struct {
	attempts, position int
}

type acqProbeKey struct{}

// noteAttempt counts a pass of an observed acquisition that runs its own
// retry loop (a Semaphore's). Without an Observer it costs a nil check.
func (s *Session) noteAttempt(ctx context.Context) {
	if s.cfg.obs == nil {
		return
	}
	if p, ok := ctx.Value(acqProbeKey{}).(*acqProbe); ok {
		p.attempts++
	}
}

// notePosition records, on an observed acquisition, the caller's position
// at its first listing of a pass. Without an Observer it costs a nil check.
func (s *Session) notePosition(ctx context.Context, first bool, nodes []queueNode, own string) {
	if s.cfg.obs == nil || !first {
		return
	}
	if p, ok := ctx.Value(acqProbeKey{}).(*acqProbe); ok {
		p.position = indexOf(nodes, own)
	}
}

// acquireObserved is queue.acquire reported to the Session's Observer.
func (q *queue) acquireObserved(ctx context.Context, data []byte, try bool, onEnd func()) (*hold, error) {
	if p, ok := ctx.Value(acqProbeKey{}).(*acqProbe); ok {
		// Inside an observed downgrade (downgradeObserved), which reports.
		return retryStartOver(ctx, q.s, q.s.rel(q.dir), "acquisition", q.passes(ctx, func() (*hold, error) {
			p.attempts++
			p.position = -1
			return q.attempt(ctx, data, try, onEnd)
		}))
	}
	o, start := q.s.cfg.obs, time.Now()
	info := q.s.recipeInfo(q.obs.kind, q.obs.name, q.s.rel(q.dir))
	if octx := o.AcquireStart(ctx, AcquireStartEvent{Recipe: info, Try: try, N: 1}); octx != nil {
		ctx = octx
	}
	p := &acqProbe{position: -1}
	pctx := context.WithValue(ctx, acqProbeKey{}, p)
	h, err := retryStartOver(pctx, q.s, q.s.rel(q.dir), "acquisition", q.passes(pctx, func() (*hold, error) {
		p.attempts++
		p.position = -1
		return q.attempt(pctx, data, try, onEnd)
	}))
	ev := AcquireEndEvent{Recipe: info, Try: try, N: 1, Wait: time.Since(start), Attempts: p.attempts, Position: p.position, Err: err}
	if h != nil {
		ev.Token = h.token
	}
	o.AcquireEnd(ctx, ev)
	if h != nil {
		h.observe(ctx, info)
	}
	return h, err
}

// reportReentry reports a reentrant acquisition, granted lease l at once
// on the hold the goroutine has. Without an Observer it costs a nil check.
func (q *queue) reportReentry(ctx context.Context, try bool, l *Lease) {
	o := q.s.cfg.obs
	if o == nil || q.obs.kind == "" {
		return
	}
	start := time.Now()
	info := q.s.recipeInfo(q.obs.kind, q.obs.name, q.s.rel(q.dir))
	if octx := o.AcquireStart(ctx, AcquireStartEvent{Recipe: info, Try: try, N: 1, Reentrant: true}); octx != nil {
		ctx = octx
	}
	o.AcquireEnd(ctx, AcquireEndEvent{Recipe: info, Try: try, N: 1, Reentrant: true,
		Wait: time.Since(start), Position: -1, Token: l.Token()})
}

// downgradeObserved is RWMutex.downgradeOrQueue reported to the Session's
// Observer as one acquisition of the read lock: its requests run under
// the ctx AcquireStart returns, and its hold reports its end.
func (rw *RWMutex) downgradeObserved(ctx context.Context, held *hold, try bool, onEnd func()) (*hold, error) {
	q := &rw.rq
	o, start := rw.s.cfg.obs, time.Now()
	info := rw.s.recipeInfo(q.obs.kind, q.obs.name, rw.s.rel(q.dir))
	if octx := o.AcquireStart(ctx, AcquireStartEvent{Recipe: info, Try: try, N: 1, Downgrade: true}); octx != nil {
		ctx = octx
	}
	p := &acqProbe{attempts: 1, position: 0}
	h, err := rw.downgradeOrQueue(context.WithValue(ctx, acqProbeKey{}, p), held, try, onEnd)
	ev := AcquireEndEvent{Recipe: info, Try: try, N: 1, Downgrade: true, Wait: time.Since(start),
		Attempts: p.attempts, Position: p.position, Err: err}
	if h != nil {
		ev.Token = h.token
	}
	o.AcquireEnd(ctx, ev)
	if h != nil {
		h.observe(ctx, info)
	}
	return h, err
}

// observeAcquire is Semaphore.acquire reported to the Session's Observer.
func (sem *Semaphore) observeAcquire(ctx context.Context, n int, try bool, acquire func(context.Context) ([]*Lease, error)) ([]*Lease, error) {
	o, start := sem.s.cfg.obs, time.Now()
	info := sem.s.recipeInfo(KindSemaphore, sem.cfg.lock.name, sem.path)
	if octx := o.AcquireStart(ctx, AcquireStartEvent{Recipe: info, Try: try, N: n}); octx != nil {
		ctx = octx
	}
	p := &acqProbe{position: -1}
	leases, err := acquire(context.WithValue(ctx, acqProbeKey{}, p))
	ev := AcquireEndEvent{Recipe: info, Try: try, N: n, Wait: time.Since(start), Attempts: max(p.attempts, 1), Position: -1, Err: err}
	if len(leases) > 0 {
		ev.Token = leases[0].h.token
	}
	o.AcquireEnd(ctx, ev)
	for _, l := range leases {
		l.h.observe(ctx, info)
	}
	return leases, err
}

// observe makes a granted hold report its end. If it has already ended,
// its end is reported now (lose and release report only a hold already
// observed, both under h.mu).
func (h *hold) observe(ctx context.Context, info RecipeInfo) {
	h.mu.Lock()
	h.obs = &holdObs{info: info, granted: time.Now()}
	ended := h.sig.fired()
	h.mu.Unlock()
	if ended {
		h.reportEnd(ctx, h.obs, h.sig.err)
	}
}

// reportEnd reports the end of an observed hold.
func (h *hold) reportEnd(ctx context.Context, ob *holdObs, err error) {
	if ob == nil || h.s.cfg.obs == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cause := endCause(err)
	if cause == EndReleased && h.revoked != nil && h.revoked.fired() {
		cause = EndRevoked
	}
	h.s.cfg.obs.LeaseEnd(ctx, LeaseEndEvent{Recipe: ob.info, Held: time.Since(ob.granted), Cause: cause, Err: err, Token: h.token})
}

// endCause classifies the error a lease ended with.
func endCause(err error) EndCause {
	switch {
	case errors.Is(err, ErrReleased):
		return EndReleased
	case errors.Is(err, ErrLeaseExpired):
		return EndLeaseTime
	case errors.Is(err, ErrSuspended):
		return EndSuspended
	case errors.Is(err, ErrSessionExpired):
		return EndExpired
	case errors.Is(err, ErrSessionChanged):
		return EndSessionChanged
	case errors.Is(err, ErrNodeDeleted):
		return EndDeleted
	case errors.Is(err, ErrClosed):
		return EndClosed
	}
	return EndOther
}

// reportOp reports one request to the Observer (a Tracer's adapter among
// them, trace.go).
func (s *Session) reportOp(ctx context.Context, op, path string, start time.Time, err error) {
	if o := s.cfg.obs; o != nil {
		lat := time.Since(start)
		sid := s.conn.SessionID()
		rel := s.rel(path)
		name := ""
		if s.cfg.names != nil {
			name = s.cfg.names(rel)
		}
		if ctx == nil {
			ctx = context.Background()
		}
		o.OpDone(ctx, OpEvent{Op: op, Name: name, Path: rel, Start: start, Latency: lat, Err: err, SessionID: sid, abs: path})
	}
}

// reportState reports a state change to the Observer (s.reportMu held,
// s.mu not: see reportStates).
func (s *Session) reportState(ch StateChange) {
	if s.cfg.obs != nil {
		s.cfg.obs.StateChanged(ch)
	}
}

// reportCacheSync reports a cache of the given kind and name on path
// (relative to the namespace) that has read its whole tree.
func (s *Session) reportCacheSync(kind, name, path string, initial bool, nodes, backlog int) {
	if s.cfg.obs != nil {
		s.cfg.obs.CacheSynced(CacheSyncEvent{Recipe: s.recipeInfo(kind, name, path),
			Initial: initial, Nodes: nodes, Backlog: backlog})
	}
}

// backlogMark is what a cache last reported of its backlog.
type backlogMark struct {
	level int  // backlogLevel of the last report
	shown bool // the last report was not 0
}

// backlogLevel groups backlogs by power of two from 32 up: 0 below 32.
func backlogLevel(n int) int { return bits.Len(uint(n >> 5)) }

// noteBacklog reports the backlog n of a cache of the given kind and name
// on path when its level changed since the last report, or 0 once it is
// drained after a report (the cache's lock held). Without an Observer it
// costs a nil check.
func (s *Session) noteBacklog(m *backlogMark, kind, name, path string, n int) {
	if s.cfg.obs == nil {
		return
	}
	lvl := backlogLevel(n)
	if lvl == m.level && (n != 0 || !m.shown) {
		return
	}
	m.level, m.shown = lvl, n != 0
	s.cfg.obs.CacheBacklog(CacheBacklogEvent{Recipe: s.recipeInfo(kind, name, path), Backlog: n})
}
