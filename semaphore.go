package zkrecipes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Semaphore is a distributed counting semaphore: at most max leases are
// held at once on its path, across every process. It is wire-compatible
// with Curator's InterProcessSemaphoreV2, so Curator and Go processes can
// share one semaphore.
//
// Waiters are served in the order they arrive, and a returned lease wakes
// only the first of them. A lease is held until it is released or lost (see
// Lease). The layout is Curator's (P/locks, a mutex; P/leases, the leases);
// the mechanism is in docs/design-locks.md.
//
// The maximum is fixed, or read from a shared count node (WithSharedCount)
// that any client may change at runtime, in the format of Curator's
// SharedCount: a 4-byte big-endian integer. A count of zero or less admits
// nobody until it is raised.
//
// NewSemaphore does no I/O. A Semaphore is safe for concurrent use.
type Semaphore struct {
	s      *Session
	path   string
	max    int
	err    error
	cfg    semConfig
	lock   queue // the mutex under P/locks
	leases queue // the lease nodes under P/leases
	count  *countCache
}

// SemaphoreOption configures NewSemaphore: WithSharedCount, or a
// LockOption (WithNodeData sets the data of the lease nodes and of the
// semaphore's mutex nodes; WithFastHandoff applies to its mutex; WithName
// names it). It is an interface, as every recipe option is, so that one
// option value (a LockOption, WithName) can be several recipes' option.
type SemaphoreOption interface{ applySemaphore(*semConfig) }

// semOption is a SemaphoreOption that only a Semaphore takes.
type semOption func(*semConfig)

func (o semOption) applySemaphore(c *semConfig) { o(c) }

type semConfig struct {
	lock      lockConfig // node data of leases and mutex nodes; fast handoff of the mutex
	countPath string
	err       error
}

func buildSemConfig(opts []SemaphoreOption) (semConfig, error) {
	c := semConfig{lock: lockConfig{fast: true}}
	for _, o := range opts {
		if o == nil {
			return c, invalidArg("nil SemaphoreOption")
		}
		o.applySemaphore(&c)
	}
	return c, cmp.Or(c.err, c.lock.err, c.lock.checkRevocable())
}

// WithSharedCount makes the semaphore read its maximum from the node at
// countPath (relative to the Session's namespace) instead of using a fixed
// one: a 4-byte big-endian integer, the format of Curator's SharedCount, so
// a Curator SharedCount and this semaphore can share it. Any client may
// change the count at runtime; waiters see the change at once. The node is
// created (persistent, its parents as containers) with the maximum given
// to NewSemaphore when it does not exist. A node that does not hold 4
// bytes makes Acquire fail with ErrBadCount. Default: a fixed maximum.
func WithSharedCount(countPath string) SemaphoreOption {
	return semOption(func(c *semConfig) {
		if countPath == "" {
			c.err = invalidArg("empty shared count path")
			return
		}
		c.countPath = countPath
	})
}

// Names under a semaphore's path, as Curator's InterProcessSemaphoreV2
// writes them.
const (
	semLocks     = "locks"
	semLeases    = "leases"
	semLeaseName = "lease-"
)

// NewSemaphore returns a semaphore on path (relative to the Session's
// namespace) that admits at most max leases at once; with WithSharedCount,
// max only seeds the count node when it does not exist. It does no I/O; an
// invalid path, a nil session, a max below 1, a bad option or lease data
// too large (ErrDataTooLarge) is reported by every method.
func NewSemaphore(s *Session, path string, max int, opts ...SemaphoreOption) *Semaphore {
	sem := &Semaphore{s: s, path: path, max: max}
	sem.cfg, sem.err = buildSemConfig(opts)
	if sem.err == nil && max < 1 {
		sem.err = invalidArg("semaphore maximum %d is below 1", max)
	}
	if sem.err == nil {
		sem.err = checkRecipe(s, path)
	}
	if sem.err == nil && sem.cfg.countPath != "" {
		sem.err = validatePath(sem.cfg.countPath)
	}
	if sem.err == nil {
		dir := s.abs(path)
		sem.lock = queue{s: s, dir: joinPath(dir, semLocks), driver: mutexDriver(sem.cfg.lock.fast)}
		sem.leases = queue{s: s, dir: joinPath(dir, semLeases), driver: driver{name: semLeaseName, kind: kindSemaphore}}
		if sem.cfg.countPath != "" {
			sem.count = &countCache{path: s.abs(sem.cfg.countPath), seed: int32(max)}
		}
		sem.err = sem.checkData()
	}
	return sem
}

// checkData reports node data too large for the semaphore's nodes: its
// mutex's nodes and lease nodes, which carry the lease data, and the
// shared count node.
func (sem *Semaphore) checkData() error {
	err := sem.s.checkNodeData(sem.path, sem.cfg.lock.data(),
		protectedNode(sem.lock.dir, sem.lock.name), protectedNode(sem.leases.dir, semLeaseName))
	if err == nil && sem.count != nil {
		err = sem.s.checkNodeData(sem.cfg.countPath, make([]byte, 4), sem.count.path)
	}
	return err
}

// Path returns the semaphore's path, as given to NewSemaphore.
func (sem *Semaphore) Path() string { return sem.path }

// Acquire blocks until the caller holds n leases, all at once, or ctx ends.
// It is all-or-nothing: it returns n leases, each with its own node, Done,
// Err, Token and Release (like Curator's collection of leases, so that
// they can be returned one by one), oldest first (tokens ascending), or an
// error and none: two clients that each want several leases never hold
// part of what they want while waiting for the rest (Curator's acquire(n)
// takes one lease at a time and can leave them so).
//
// With a fixed maximum, n above it fails at once with ErrInvalidArgument;
// so does an n whose lease nodes could not all be listed in one reply
// within the Session's request size limit (17475 at the default), which a
// Curator peer could not read.
// When the session expires while waiting, acquisition starts over on the
// next session under the Session's retry policy (ErrRetriesExhausted when
// it gives up). On cancel, deadline or any error every node it created is
// deleted before it returns (in the background if the connection is down),
// and the error returned: ctx's error (named as Mutex.Acquire names it),
// ErrClosed, ErrBadCount, ErrRecipeConflict or a ZooKeeper error.
func (sem *Semaphore) Acquire(ctx context.Context, n int) ([]*Lease, error) {
	return sem.acquire(ctx, n, false)
}

// TryAcquire is Acquire that fails at once with an error matching ErrLocked,
// leaving no node behind, when n leases are not free now, or when another
// client holds the semaphore's mutex (it is acquiring, or waiting for
// leases).
func (sem *Semaphore) TryAcquire(ctx context.Context, n int) ([]*Lease, error) {
	return sem.acquire(ctx, n, true)
}

func (sem *Semaphore) acquire(ctx context.Context, n int, try bool) ([]*Lease, error) {
	if sem.err != nil {
		return nil, sem.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	if n < 1 || (sem.count == nil && n > sem.max) {
		return nil, invalidArg("cannot acquire %d leases of a semaphore of %d", n, sem.max)
	}
	if most := sem.s.mostListed(semLeaseName); n > most {
		return nil, invalidArg("cannot acquire %d leases at once: a listing of more than %d lease nodes does not fit "+
			"in a reply under the request size limit; acquire fewer", n, most)
	}
	if sem.s.cfg.obs != nil {
		return sem.observeAcquire(ctx, n, try, func(ctx context.Context) ([]*Lease, error) { return sem.acquireN(ctx, n, try) }) // observe.go
	}
	return sem.acquireN(ctx, n, try)
}

// acquireN runs attempts until one grants n leases or fails for good.
func (sem *Semaphore) acquireN(ctx context.Context, n int, try bool) ([]*Lease, error) {
	return retryStartOver(ctx, sem.s, sem.path, "semaphore acquisition", func() ([]*Lease, error) {
		sem.s.noteAttempt(ctx) // observe.go
		return sem.attempt(ctx, n, try)
	})
}

// attempt is one pass (Curator's InterProcessSemaphoreV2): take the mutex,
// create n lease nodes, wait until they fit, release the mutex.
func (sem *Semaphore) attempt(ctx context.Context, n int, try bool) (leases []*Lease, err error) {
	lockHold, err := sem.lock.acquire(ctx, sem.cfg.lock.data(), try, func() {})
	if err != nil {
		return nil, err
	}
	defer func() { sem.unlock(lockHold, leases != nil) }()
	p := &semPass{sem: sem}
	defer func() {
		if leases == nil {
			for _, nd := range p.nodes {
				sem.s.removeNode(nd)
			}
		}
	}()
	p.parent = sem.listPath(ctx)
	defer p.parent() // never leave a read behind
	if err := p.create(ctx, n); err != nil {
		return nil, err
	}
	p.readSelves(ctx)
	defer p.check() // never leave a read behind
	return p.wait(ctx, try, lockHold)
}

// unlock releases the semaphore's mutex. Once the leases are granted it
// does so without making the caller wait for the reply.
func (sem *Semaphore) unlock(lockHold *hold, granted bool) {
	if granted {
		sem.s.goBackground(cleanupTimeout, func(ctx context.Context) { _ = lockHold.release(ctx) })
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = lockHold.release(rctx)
}

// pathListing is the listing of the semaphore's own path.
type pathListing struct {
	kids []string
	err  error
}

// listPath lists the semaphore's own path beside the creates: nodes of
// another recipe there (a mutex's, say) mean two recipes share it. The
// function it returns waits for that listing.
func (sem *Semaphore) listPath(ctx context.Context) func() pathListing {
	c := make(chan pathListing, 1)
	go func() {
		kids, err := sem.s.children(ctx, sem.s.abs(sem.path))
		c <- pathListing{kids, err}
	}()
	return sync.OnceValue(func() pathListing { return <-c })
}

// semPass is one pass's lease nodes and what it knows of them.
type semPass struct {
	sem     *Semaphore
	nodes   []ownNode
	first   *listing // the leases listed right behind a single create
	token   int64    // the lease's token from its create's reply or that listing, 0 if unknown
	parent  func() pathListing
	selves  []chan leaseSelf
	tokens  []int64
	selfWs  []<-chan zk.Event
	checked bool
}

// leaseSelf is what the read of a lease node found.
type leaseSelf struct {
	st    *zk.Stat // nil with the token from the listing
	token int64
	w     <-chan zk.Event
	err   error
}

// create creates the pass's lease nodes. A single lease is created with
// the leases listed right behind it (see queue.create). Under the
// semaphore's mutex no other lease is created meanwhile, so the create's
// reply or that listing normally gives the lease's token too (see
// createListed), and the lease's node need not be read.
func (p *semPass) create(ctx context.Context, n int) error {
	sem := p.sem
	var err error
	if n == 1 {
		var nd ownNode
		var l listing
		nd, l, p.token, err = sem.leases.create(ctx, sem.cfg.lock.data(), watchList)
		if err == nil {
			p.nodes = append(p.nodes, nd)
			if l.kids != nil {
				p.first = &l
			}
		}
	} else {
		p.nodes, err = sem.createLeases(ctx, n) // on error, the caller removes the nodes made
	}
	if err != nil {
		if errors.Is(err, zk.ErrSessionExpired) {
			return &startOver{err}
		}
		return err
	}
	for _, nd := range p.nodes[1:] {
		if nd.gen != p.nodes[0].gen {
			return &startOver{lost(ErrSessionChanged)}
		}
	}
	return nil
}

// readSelves reads each lease node beside the first listing of the leases,
// in the same round trip: its czxid is the lease's token, its owner check
// rejects a node adopted from an older session, and its deletion watch
// reports the node's loss once held. A lease whose token its create's
// reply or the listing behind it gave is not read (its hold sets that
// watch later).
func (p *semPass) readSelves(ctx context.Context) {
	n := len(p.nodes)
	p.selves, p.tokens, p.selfWs = make([]chan leaseSelf, n), make([]int64, n), make([]<-chan zk.Event, n)
	for i, nd := range p.nodes {
		p.selves[i] = make(chan leaseSelf, 1)
		if p.token != 0 { // the pass's only node
			p.selves[i] <- leaseSelf{token: p.token}
			continue
		}
		go func() {
			for {
				st, w, err := p.sem.s.watchDeletion(ctx, nd.path)
				if err != nil {
					if err = p.sem.leases.classify(ctx, nd, err); err == nil {
						continue
					}
				}
				p.selves[i] <- leaseSelf{st: st, w: w, err: err}
				return
			}
		}()
	}
}

// check takes the reads of readSelves and listPath, once: the first
// failure, a node of another session, or another recipe on the path.
func (p *semPass) check() error {
	if p.checked {
		return nil
	}
	p.checked = true
	var bad error
	for i, nd := range p.nodes {
		r := <-p.selves[i]
		switch {
		case r.err != nil:
			bad = cmp.Or(bad, r.err)
		case r.st == nil:
			p.tokens[i] = r.token
		case r.st.EphemeralOwner != nd.gen.id:
			bad = cmp.Or(bad, error(&startOver{fmt.Errorf("%w: node %s belongs to session 0x%x", ErrSessionChanged, baseName(nd.path), r.st.EphemeralOwner)}))
		default:
			p.tokens[i], p.selfWs[i] = r.st.Czxid, r.w
		}
	}
	pl := p.parent()
	if bad != nil {
		return bad
	}
	if pl.err == nil {
		if k := conflictingKind(sortNodes(pl.kids, mutexMarkers), kindSemaphore); k != "" {
			return fmt.Errorf("%w: %s holds %s nodes; this is a %s", ErrRecipeConflict, p.sem.path, k, kindSemaphore)
		}
	}
	return nil
}

// wait is the semaphore's wait, its predicate the count of leases: it
// lists the leases with a watch until they are within the maximum, then
// confirms the session (grant) and returns the leases.
func (p *semPass) wait(ctx context.Context, try bool, lockHold *hold) ([]*Lease, error) {
	sem, node := p.sem, p.nodes[0]
	for {
		kids, kidsW, err := p.listLeases(ctx)
		if cerr := p.check(); cerr != nil {
			return nil, cerr
		}
		if err != nil {
			if err = sem.leases.classify(ctx, node, err); err != nil {
				return nil, err
			}
			continue
		}
		for _, nd := range p.nodes {
			if !slices.Contains(kids, baseName(nd.path)) {
				return nil, &startOver{lost(ErrNodeDeleted)}
			}
		}
		for relist := false; !relist; {
			max, countW, err := sem.maximum(ctx, node)
			if err != nil {
				return nil, err
			}
			if len(kids) <= max {
				return p.grant(ctx)
			}
			if try {
				return nil, fmt.Errorf("%w: %s: %d leases held, maximum %d", ErrLocked, sem.path, len(kids)-len(p.nodes), max)
			}
			if relist, err = sem.awaitChange(ctx, node, lockHold, kidsW, countW); err != nil {
				return nil, err
			}
		}
	}
}

// listLeases lists the leases with a watch, or takes the listing made
// right behind the create.
func (p *semPass) listLeases(ctx context.Context) ([]string, <-chan zk.Event, error) {
	if l := p.first; l != nil {
		p.first = nil
		return l.kids, l.w, nil
	}
	return p.sem.s.childrenW(ctx, p.sem.leases.dir)
}

// grant confirms the session still stands and returns the leases.
func (p *semPass) grant(ctx context.Context) ([]*Lease, error) {
	epoch, err := p.sem.leases.grant(ctx, p.nodes[0])
	if err != nil {
		return nil, err
	}
	leases := make([]*Lease, len(p.nodes))
	for i, nd := range p.nodes {
		h, _ := p.sem.cfg.lock.start(newHold(p.sem.s, nd, p.tokens[i], p.selfWs[i], epoch, func() {}), nil)
		leases[i] = &Lease{h: h}
	}
	return leases, nil
}

// createLeases creates n lease nodes at once: their creates leave
// together, one round trip for all instead of one each. It returns the
// nodes it made, oldest first, and the first error; it returns only once
// every create is over, so the caller can remove each node it got.
func (sem *Semaphore) createLeases(ctx context.Context, n int) ([]ownNode, error) {
	type created struct {
		nd  ownNode
		err error
	}
	res := make(chan created, n)
	for range n {
		go func() {
			nd, err := sem.s.createProtected(ctx, sem.leases.dir, semLeaseName, sem.cfg.lock.data())
			res <- created{nd, err}
		}()
	}
	var nodes []ownNode
	var first error
	for range n {
		r := <-res
		if r.err != nil {
			first = cmp.Or(first, r.err)
			continue
		}
		nodes = append(nodes, r.nd)
	}
	slices.SortFunc(nodes, func(a, b ownNode) int {
		return cmp.Compare(parseSeq(a.path[len(a.path)-10:]), parseSeq(b.path[len(b.path)-10:]))
	})
	return nodes, first
}

// awaitChange waits for a change of the leases (relist true) or of the shared
// count (relist false).
func (sem *Semaphore) awaitChange(ctx context.Context, node ownNode, lockHold *hold, kidsW, countW <-chan zk.Event) (bool, error) {
	lq := &sem.leases
	select {
	case ev := <-kidsW:
		if ev.Type == zk.EventNotWatching {
			if err := lq.classify(ctx, node, ev.Err); err != nil {
				return false, err
			}
		}
		return true, nil
	case ev := <-countW:
		sem.count.drop(countW)
		if ev.Type == zk.EventNotWatching {
			if err := lq.classify(ctx, node, ev.Err); err != nil {
				return false, err
			}
		}
		// The leases watch is still set: wait on it again after
		// re-reading the count.
		return false, nil
	case <-lockHold.sig.done:
		// The mutex was lost (the connection dropped): another client may
		// be creating leases now; start again from the mutex.
		return false, &startOver{lockHold.sig.err}
	case <-node.gen.done:
		return false, &startOver{node.gen.err}
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
