package zkrecipes

import (
	"context"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Node names of the read-write lock, as Curator's InterProcessReadWriteLock
// writes them after the protected prefix. Both have the same length, so the
// two kinds sort together by sequence.
const (
	writeName = "__WRIT__"
	readName  = "__READ__"
)

// RWMutex is a distributed read-write lock on a ZooKeeper path,
// wire-compatible with Curator's InterProcessReadWriteLock: a writer
// excludes every other holder; readers share the lock with each other.
//
// Contenders are served in the order they queued: a writer holds once every
// contender queued before it is gone; a reader holds once no writer queued
// before it remains, so a waiting writer is not overtaken by later readers.
// Readers and writers cannot deadlock one another (kazoo #649).
//
// Both sides are reentrant per RWMutex value and goroutine, as a Mutex is
// (another RWMutex on the path is another contender). A goroutine that holds the write
// lock may take the read lock (a downgrade) and then release the write
// lock: no waiting writer gets in between (CURATOR-276), and the read lease
// has the write lease's token (see Lease.Token). A goroutine that holds
// only the read lock and asks for the write lock gets ErrUpgrade at once:
// that wait could never end (Curator waits forever). Curator 5.4 peers stay
// safe beside a downgraded read lock. The nodes are Curator's
// (P/_c_<uuid>-__WRIT__<seq>, P/_c_<uuid>-__READ__<seq>); the mechanism is
// in docs/design-locks.md.
//
// NewRWMutex does no I/O. An RWMutex is safe for concurrent use.
type RWMutex struct {
	s    *Session
	path string
	err  error
	cfg  lockConfig
	wq   queue
	rq   queue

	writers, readers holders
}

// NewRWMutex returns a read-write lock on path (relative to the Session's
// namespace). It does no I/O; an invalid path, a nil session or a bad
// option is reported by every method. WithFastHandoff has no effect: see
// RWMutex.
func NewRWMutex(s *Session, path string, opts ...LockOption) *RWMutex {
	rw := &RWMutex{s: s, path: path}
	rw.cfg, rw.err = buildLockConfig(opts)
	if rw.err == nil {
		rw.err = checkRecipe(s, path)
	}
	if rw.err == nil {
		dir := s.abs(path)
		rw.wq = queue{s: s, dir: dir, driver: driver{name: writeName, markers: rwMarkers, kind: kindReadWrite, pred: maxLeasesPredicate(1)}}
		rw.rq = queue{s: s, dir: dir, driver: driver{name: readName, markers: rwMarkers, kind: kindReadWrite, pred: readPredicate}}
		rw.wq.obs, rw.rq.obs = observed{KindWriteLock, rw.cfg.name}, observed{KindReadLock, rw.cfg.name}
		rw.err = s.checkNodeData(path, rw.cfg.data(), protectedNode(dir, writeName))
	}
	return rw
}

// WriteLock returns the exclusive side of the lock.
func (rw *RWMutex) WriteLock() *RWLock { return &RWLock{rw: rw, write: true} }

// ReadLock returns the shared side of the lock.
func (rw *RWMutex) ReadLock() *RWLock { return &RWLock{rw: rw} }

// Path returns the lock's path, as given to NewRWMutex.
func (rw *RWMutex) Path() string { return rw.path }

// Participants lists the contenders of both sides in queue order, each
// marked Holder when it holds: the first node if it is a writer's, and
// every reader with no writer's node ahead of it. It fails with ctx's
// error, ErrClosed or a ZooKeeper error; a path that does not exist yet
// has no participants.
func (rw *RWMutex) Participants(ctx context.Context) ([]Participant, error) {
	if rw.err != nil {
		return nil, rw.err
	}
	return rw.s.participants(ctx, rw.wq.dir, rw.wq.markers, func(nodes []queueNode, i int) bool {
		if strings.Contains(nodes[i].name, writeName) {
			return i == 0
		}
		held, _ := readPredicate(nodes, i)
		return held
	})
}

// RWLock is one side of an RWMutex: the write lock or the read lock. It is
// safe for concurrent use.
type RWLock struct {
	rw    *RWMutex
	write bool
}

// Acquire blocks until the calling goroutine holds this side of the lock or
// ctx ends. A goroutine that already holds this side gets a new lease on
// the same hold at once. The read lock, asked for by a goroutine that holds
// the write lock, is granted at once (a downgrade, see RWMutex). The write
// lock, asked for by a goroutine that holds only the read lock, fails at
// once with ErrUpgrade. Otherwise Acquire behaves as Mutex.Acquire: it
// starts over on a new session after an expiry (ErrRetriesExhausted when
// the retry policy gives up), and on cancel or any error deletes its node
// and returns ctx's error, ErrClosed, ErrRecipeConflict or a ZooKeeper
// error.
func (l *RWLock) Acquire(ctx context.Context) (*Lease, error) { return l.acquire(ctx, false) }

// TryAcquire is Acquire that returns an error matching ErrLocked at once,
// leaving no node behind, when the lock cannot be granted now.
func (l *RWLock) TryAcquire(ctx context.Context) (*Lease, error) { return l.acquire(ctx, true) }

func (l *RWLock) acquire(ctx context.Context, try bool) (*Lease, error) {
	rw := l.rw
	if rw.err != nil {
		return nil, rw.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	gid := goid()
	own, other, q := &rw.readers, &rw.writers, &rw.rq
	if l.write {
		own, other, q = &rw.writers, &rw.readers, &rw.wq
	}
	if lease, ok := own.reenter(gid); ok {
		q.reportReentry(ctx, try, lease) // observe.go
		return lease, nil
	}
	held := other.live(gid)
	if l.write && held != nil {
		return nil, ErrUpgrade
	}
	return own.grant(gid, func(onEnd func()) (*hold, error) {
		if held != nil && rw.s.cfg.obs != nil {
			return rw.downgradeObserved(ctx, held, try, onEnd) // observe.go
		}
		if held != nil { // a writer takes the read lock: downgrade
			return rw.downgradeOrQueue(ctx, held, try, onEnd)
		}
		return rw.cfg.start(q.acquire(ctx, rw.cfg.data(), try, onEnd))
	})
}

// downgradeOrQueue grants the read lock to the holder of the write lock
// held, or queues as any reader does when held turned out to be gone.
func (rw *RWMutex) downgradeOrQueue(ctx context.Context, held *hold, try bool, onEnd func()) (*hold, error) {
	nh, err := rw.downgrade(ctx, held, onEnd)
	if nh != nil || err != nil {
		return rw.cfg.startWithin(nh, err, held.leaseLeft())
	}
	return rw.cfg.start(rw.rq.acquire(ctx, rw.cfg.data(), try, onEnd))
}

// downgrade grants the read lock to the holder of the write lock w: a
// non-sequential read node named with w's sequence number, so that it
// sorts at w's place. It returns (nil, nil) when w turned out to be gone,
// and the caller then queues as any reader does.
func (rw *RWMutex) downgrade(ctx context.Context, w *hold, onEnd func()) (*hold, error) {
	q := &rw.rq
	seq := sortKey(baseName(w.node.path), rwMarkers)
	node, err := rw.s.createProtectedMode(ctx, q.dir, newUUID(), readName+seq, rw.cfg.data(), zk.FlagEphemeral)
	if err != nil {
		return nil, err
	}
	granted := false
	defer func() {
		if !granted {
			rw.s.removeNode(node)
		}
	}()
	if node.gen != w.node.gen {
		return nil, nil // the write lock's session is gone
	}
	_, selfW, err := rw.s.watchDeletion(ctx, node.path)
	if err != nil {
		return nil, q.classify(ctx, node, err)
	}
	// The writer's node must still exist after the read node was created:
	// then any writer that is granted later lists the children after this
	// read node exists, and waits for it.
	if _, err := rw.s.exists(ctx, w.node.path); err == zk.ErrNoNode {
		return nil, nil
	} else if err != nil {
		return nil, q.classify(ctx, node, err)
	}
	epoch, err := q.grant(ctx, node)
	if err != nil {
		return nil, err
	}
	granted = true
	// The read lease continues w's ownership and takes w's token, not its
	// own node's czxid: nodes queued behind w before this create have a
	// lower czxid and are granted after this lease (the readers once w is
	// released, the writers once this lease is), so a token taken from
	// this create would go down in grant order. w's token is above every
	// earlier lease's and below every later one's (every node granted
	// later was created after w's, and its token is at least its czxid),
	// and nothing else is granted between w and this lease.
	return newHold(rw.s, node, w.token, selfW, epoch, onEnd), nil
}

// readPredicate holds a reader when no writer's node sorts before its own;
// otherwise it watches the nearest writer ahead.
func readPredicate(nodes []queueNode, self int) (bool, int) {
	for i := self - 1; i >= 0; i-- {
		if strings.Contains(nodes[i].name, writeName) {
			return false, i
		}
	}
	return true, -1
}

// configErr returns what NewRWMutex found wrong (see MultiLock).
func (l *RWLock) configErr() error { return l.rw.err }
