package zkrecipes

import (
	"context"
)

// Mutex is a distributed, reentrant mutual-exclusion lock on a ZooKeeper
// path, wire-compatible with Curator's InterProcessMutex: a Curator process
// and a Go process using the same path exclude each other.
//
// Contenders hold the lock one at a time, in the order they queued, and a
// release wakes only the next in line. The lock is reentrant per Mutex
// value and goroutine, as Curator's is per instance and thread: a goroutine
// that holds it through this Mutex acquires again at once, and the lock is
// released when the last of its leases is. Another Mutex on the same path,
// even from the same Session in the same goroutine, is another contender:
// its Acquire waits for this one's release (in the holding goroutine, for
// ever). Share one Mutex value to re-enter. The nodes
// are Curator's (P/_c_<uuid>-lock-<seq>, see docs/compatibility.md); how
// the queue works is in docs/design-locks.md.
//
// Nodes named by kazoo's Lock (<hex>__lock__<seq>) are treated as
// contenders too, so kazoo clients cannot be overtaken; kazoo in turn
// respects these nodes with extra_lock_patterns=["-lock-"]. Curator does
// not recognise kazoo's nodes: do not mix Curator and kazoo on one path.
//
// NewMutex does no I/O. A Mutex is safe for concurrent use.
type Mutex struct {
	s    *Session
	path string
	err  error
	cfg  lockConfig
	q    queue

	holds holders
}

// NewMutex returns a mutex on path (relative to the Session's namespace).
// It does no I/O; an invalid path, a nil session, a bad option or node
// data too large (ErrDataTooLarge) is reported by every method of the
// Mutex.
func NewMutex(s *Session, path string, opts ...LockOption) *Mutex {
	m := &Mutex{s: s, path: path}
	m.cfg, m.err = buildLockConfig(opts)
	if m.err == nil {
		m.err = checkRecipe(s, path)
	}
	if m.err == nil {
		m.q = queue{s: s, dir: s.abs(path), driver: mutexDriver(m.cfg.fast)}
		m.q.obs = observed{KindMutex, m.cfg.name}
		m.err = s.checkNodeData(path, m.cfg.data(), protectedNode(m.q.dir, m.q.name))
	}
	return m
}

// Acquire blocks until the calling goroutine holds the lock or ctx ends.
// If the goroutine already holds it, Acquire returns a new lease on the
// same hold at once. When the session expires while waiting, acquisition
// starts over on the next session under the Session's retry policy, and
// fails with an error matching ErrRetriesExhausted when the policy gives
// up. On cancel, deadline or any error its queue node is deleted (in the
// background if the connection is down) and the error returned: ctx's
// error, ErrClosed, ErrRecipeConflict, or a ZooKeeper error. Ctx's error
// comes wrapped in an error that names the path and, when the Session had
// no connection as ctx ended, why each server's latest attempt failed
// ("connection refused"): errors.Is matches ctx's error and those causes.
func (m *Mutex) Acquire(ctx context.Context) (*Lease, error) { return m.acquire(ctx, false) }

// TryAcquire is Acquire that returns an error matching ErrLocked at once,
// leaving no node behind, when another owner holds the lock.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lease, error) { return m.acquire(ctx, true) }

func (m *Mutex) acquire(ctx context.Context, try bool) (*Lease, error) {
	if m.err != nil {
		return nil, m.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	gid := goid()
	if l, ok := m.holds.reenter(gid); ok {
		m.q.reportReentry(ctx, try, l) // observe.go
		return l, nil
	}
	return m.holds.grant(gid, func(onEnd func()) (*hold, error) {
		return m.cfg.start(m.q.acquire(ctx, m.cfg.data(), try, onEnd))
	})
}

// Path returns the lock's path, as given to NewMutex.
func (m *Mutex) Path() string { return m.path }

// Participants lists the contenders of the lock, holder first, then the
// queue in order. It fails with ctx's error, ErrClosed or a ZooKeeper
// error; a path that does not exist yet has no participants.
func (m *Mutex) Participants(ctx context.Context) ([]Participant, error) {
	if m.err != nil {
		return nil, m.err
	}
	return m.s.participants(ctx, m.q.dir, m.q.markers, firstHolds(1))
}

// mutexDriver runs the queue as Curator's InterProcessMutex: nodes named
// "lock-", held by the first node, each waiter watching the one before it.
func mutexDriver(fast bool) driver {
	return driver{name: "lock-", markers: mutexMarkers, kind: kindMutex, pred: maxLeasesPredicate(1), fast: fast}
}

// checkRecipe validates what every recipe constructor gets.
func checkRecipe(s *Session, path string) error {
	if s == nil {
		return ErrNilSession
	}
	if err := validatePath(path); err != nil {
		return err
	}
	return s.checkPathLength(path)
}

// checkWatched is checkRecipe for what only reads and watches its path
// (the caches, the watches): it may name ConfigPath, the ensemble's own
// read-only node.
func checkWatched(s *Session, path string) error {
	if s != nil && path == ConfigPath {
		return nil
	}
	return checkRecipe(s, path)
}

// configErr returns what NewMutex found wrong (see MultiLock).
func (m *Mutex) configErr() error { return m.err }
