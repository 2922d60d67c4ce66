package zkrecipes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Lease is proof of ownership returned by every acquisition: of a lock, a
// semaphore permit or leadership. Like a context.Context, Done closes and
// Err says why when ownership ends, released or lost. Ownership can be lost
// at any moment (the connection drops, the session expires, an operator
// deletes the node): a holder must stop when Done closes (or run its work
// under Context) and guard every write to the resource it protects with
// Token or Check. A loss of the session, under the Session's LossPolicy,
// ends the lease at once; the deletion of its node by another client ends
// it shortly after.
//
// Any goroutine that has the Lease may release it. A Lease is safe for
// concurrent use. A MultiLock's composite lease (see Members) ends when any
// member ends; its Token, Path and Check are those of its newest member.
type Lease struct {
	h *hold
	g *group // instead of h, for a composite lease

	mu  sync.Mutex
	end error // set once by Release: ErrReleased, or the loss seen before it
}

// Done returns a channel that is closed when ownership ends: lost, or
// released (for a reentrant lock, when its last lease is released).
func (l *Lease) Done() <-chan struct{} { return l.sig().done }

func (l *Lease) sig() *signal {
	if l.g != nil {
		return l.g.sig
	}
	return l.h.sig
}

// Err returns nil while the lease is held. After Done closes it returns
// ErrReleased if this lease was released, or an error matching ErrLockLost
// and its cause (ErrSuspended, ErrSessionExpired, ErrSessionChanged,
// ErrNodeDeleted, ErrClosed, ErrLeaseExpired) if ownership was lost. Once
// non-nil, Err keeps returning the same error: a lease lost and then
// released reports the loss.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.end != nil {
		return l.end
	}
	sig := l.sig()
	select {
	case <-sig.done:
		return sig.err
	default:
		return nil
	}
}

// Context returns a copy of parent that is cancelled when the lease ends
// (Done closes), when parent is done, or when cancel is called, whichever
// happens first. If the lease ends first, context.Cause of the returned
// context is the lease's Err (matching ErrLockLost and its cause, or
// ErrReleased). Call cancel once the work under it completes, as with
// context.WithCancel. Context panics if parent is nil.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sig := l.sig()
	unhook := sig.onFire(func() { cancel(sig.err) }) // runs on the loss: must not block
	context.AfterFunc(ctx, unhook)                   // however ctx ends, the hook goes
	return ctx, func() { cancel(nil) }
}

// Token returns the fencing token of this ownership, a ZooKeeper zxid. On
// one recipe path, a lease's token is above that of every lease granted on
// the path before it, across the whole ensemble and across re-creations of
// the path, with two exceptions among an RWMutex's read leases: a read
// lease taken by downgrading a write lease has that write lease's token,
// and two read leases with no write lease granted between them are not
// ordered. It is normally, not always, the creation zxid of its node.
//
// Hand the token to the resource you protect and have it reject any token
// lower than the highest it has seen (under an RWMutex: a write token
// lower than the highest of all, a read token lower than the highest write
// token). It then never refuses a current holder, and refuses a former one
// once it has seen the token of a later lease that excludes it.
func (l *Lease) Token() int64 { return l.top().token }

// Path returns the path of the lease's node, relative to the Session's
// namespace.
func (l *Lease) Path() string { h := l.top(); return h.s.rel(h.node.path) }

// top is the hold a lease's Token, Path and Check refer to.
func (l *Lease) top() *hold {
	if l.g != nil {
		return l.g.newest()
	}
	return l.h
}

// Members returns the member leases of a MultiLock's composite lease, in
// acquisition order; nil for any other lease. Releasing a member on its
// own ends the composite lease as lost.
func (l *Lease) Members() []*Lease {
	if l.g == nil {
		return nil
	}
	return append([]*Lease(nil), l.g.members...)
}

// Check returns a transaction op that succeeds only while the lease's node
// exists on the server. Put it in a Session's Multi to make writes
// conditional on still holding the lease (a fenced write):
//
//	_, err := session.Multi(ctx, lease.Check(), zkrecipes.SetOp("/config", data))
//
// The other ops' paths are relative to the Session's namespace, as
// everywhere; the check names the lease's own node. When the lease's node
// is gone, Multi applies nothing and fails with an error matching
// ErrLockLost and ErrNoNode. (The check is ZooKeeper's: a lease lost
// locally on a suspension whose node is still on the server passes it;
// watch Done for that.)
func (l *Lease) Check() Op {
	h := l.top()
	return Op{kind: OpCheck, path: h.s.rel(h.node.path), abs: h.node.path, cfg: nodeConfig{version: -1}, lease: true}
}

// Release gives up ownership; for a reentrant lock, only once the holder's
// last lease is released. It returns nil once ZooKeeper confirmed the
// delete; ErrReleaseDeferred if it could not be confirmed before ctx ended
// or the connection dropped (the lease is released anyway and its node
// deleted in the background); the loss (matching ErrLockLost) if ownership
// was already lost; ErrReleased for a second Release; and
// ErrInvalidArgument, the lease still held, for a nil ctx. A composite
// lease releases its members in reverse order and joins their errors.
func (l *Lease) Release(ctx context.Context) error {
	if ctx == nil {
		return invalidArg("nil context")
	}
	l.mu.Lock()
	if l.end != nil {
		l.mu.Unlock()
		return ErrReleased
	}
	l.end = ErrReleased
	sig := l.sig()
	select {
	case <-sig.done:
		if sig.err != ErrReleased {
			l.end = sig.err // lost before this release: Err keeps saying so
		}
	default:
	}
	l.mu.Unlock()
	if l.g != nil {
		return l.g.release(ctx)
	}
	return l.h.release(ctx)
}

// hold is one owned node, shared by the leases of a reentrant holder.
type hold struct {
	s     *Session
	node  ownNode
	token int64
	sig   *signal // ends ownership: lost or released
	onEnd func()  // drops the hold from its recipe's bookkeeping
	// handoff releases the node (nil: a plain delete); waited tells it
	// that the node had others ahead of it (see handoff.go).
	handoff handoff
	waited  bool

	mu    sync.Mutex
	count int
	// late sets the watch on the node once the hold has lasted
	// selfWatchGrace (see monitor); unhook drops the epoch hook that
	// reports a loss of the epoch.
	late   *time.Timer
	unhook func()
	// expiry ends the hold at its lease time (leasetime.go); revoked
	// closes on a revocation request (revoke.go). Both nil unless opted in.
	expiry    *time.Timer
	expiresAt time.Time // when expiry fires
	revoked   *signal
	// obs is what the hold's end reports to the Session's Observer
	// (observe.go); nil when none.
	obs *holdObs
}

// newHold starts watching a freshly granted node: its own-node watch
// (selfW, nil when none is set yet), the session generation and the
// ownership epoch. A hold costs no goroutine of its own (holdwatch.go),
// except on a Session adopted with NewSession once it has lasted
// selfWatchGrace.
func newHold(s *Session, node ownNode, token int64, selfW <-chan zk.Event, epoch *signal, onEnd func()) *hold {
	h := &hold{s: s, node: node, token: token, sig: newSignal(), onEnd: onEnd, count: 1}
	s.opsMu.RLock()
	defer s.opsMu.RUnlock()
	if s.isClosed() { // Close came between the grant and here
		h.sig.fire(lost(ErrClosed))
		return h
	}
	h.mu.Lock() // the hook and the timer may run before the fields are set
	defer h.mu.Unlock()
	h.unhook = epoch.onFire(func() {
		// Under the Session's mutex, maybe in Close (before it waits):
		// no blocking here.
		h.loseLater(epoch.err, true)
	})
	deleted := s.held.add(h)
	if !deleted && selfW != nil && s.direct {
		select {
		case ev := <-selfW:
			deleted = ev.Type == zk.EventNodeDeleted
		default:
		}
	}
	switch {
	case deleted:
		h.loseLater(lost(ErrNodeDeleted), false)
	case selfW == nil || !s.direct:
		// A short hold, the common case, sets no watch: a deletion of its
		// node meanwhile is found when the watch is set.
		h.late = time.AfterFunc(selfWatchGrace, func() { h.watchLate(selfW) })
	}
	return h
}

// loseLater runs lose on a goroutine the Session's Close waits for.
func (h *hold) loseLater(err error, cleanup bool) {
	h.s.wg.Add(1)
	go func() {
		defer h.s.wg.Done()
		h.lose(err, cleanup)
	}()
}

// watchLate starts the monitor of a hold once it has lasted
// selfWatchGrace, with the watch on its node's deletion (nil when the
// node was granted without reading it: the monitor sets it).
func (h *hold) watchLate(selfW <-chan zk.Event) {
	h.s.opsMu.RLock()
	defer h.s.opsMu.RUnlock()
	if h.s.isClosed() || h.sig.fired() {
		return
	}
	h.s.wg.Add(1)
	go h.monitor(selfW)
}

// quiet stops what a hold runs until it ends: its grace timer, its epoch
// hook, and its entry among the Session's held nodes.
func (h *hold) quiet() {
	h.mu.Lock()
	late, unhook := h.late, h.unhook
	h.mu.Unlock()
	if late != nil {
		late.Stop()
	}
	if unhook != nil {
		unhook()
	}
	h.s.held.remove(h)
}

// lease hands out one more lease on the hold, or reports that the hold has
// ended.
func (h *hold) lease() (*Lease, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sig.fired() {
		return nil, false
	}
	h.count++
	return &Lease{h: h}, true
}

// monitor sets the watch on the hold's node when none is set. On a
// Session made by Connect it then returns: the Session's event callback
// reports the deletion (holdwatch.go). Otherwise it waits on the watch
// until the node is deleted or the hold ends.
func (h *hold) monitor(selfW <-chan zk.Event) {
	defer h.s.wg.Done()
	for {
		if selfW == nil {
			if selfW = h.setWatch(); selfW == nil || h.s.direct {
				return
			}
		}
		select {
		case <-h.sig.done:
			return
		case ev := <-selfW:
			switch ev.Type {
			case zk.EventNodeDeleted:
				h.lose(lost(ErrNodeDeleted), false)
				return
			case zk.EventNotWatching:
				return // the session is ending: the epoch reports it
			}
			selfW = nil
		}
	}
}

// setWatch sets the watch on the hold's node's deletion. It returns nil
// when the hold has ended, or when the node is gone: it then ends the
// hold.
func (h *hold) setWatch() <-chan zk.Event {
	ctx, cancel := ctxUntil(h.sig.done)
	defer cancel()
	for {
		_, w, err := h.s.watchDeletion(ctx, h.node.path)
		switch {
		case err == nil:
			return w
		case err == zk.ErrNoNode:
			h.lose(lost(ErrNodeDeleted), false)
			return nil
		case isRetryable(err):
			if _, _, err := h.s.awaitConnected(ctx); err != nil {
				return nil
			}
		default:
			return nil
		}
	}
}

// lose ends the hold because ownership was lost; cleanup schedules the
// delete of a node that may outlive the loss (a suspended connection that
// comes back).
func (h *hold) lose(err error, cleanup bool) {
	h.mu.Lock()
	if h.sig.fired() {
		h.mu.Unlock()
		return
	}
	h.sig.fire(err)
	ob := h.obs
	h.mu.Unlock()
	h.reportEnd(context.Background(), ob, err) // observe.go
	h.quiet()
	h.stopExpiry()
	h.s.cfg.log.Warn("zkrecipes: ownership lost", "path", h.node.path, "err", err)
	h.onEnd()
	if cleanup {
		h.s.deleteEventually(h.node.path, h.node.gen.id)
	}
}

func (h *hold) release(ctx context.Context) error {
	h.mu.Lock()
	h.count--
	if h.sig.fired() { // lost: only the last release fires ErrReleased
		h.mu.Unlock()
		return h.sig.err
	}
	if h.count > 0 {
		h.mu.Unlock()
		return nil
	}
	h.sig.fire(ErrReleased)
	ob := h.obs
	h.mu.Unlock()
	h.reportEnd(ctx, ob, ErrReleased) // observe.go
	h.quiet()
	h.stopExpiry()
	h.onEnd()
	ho := h.handoff
	if ho == nil {
		ho = plainHandoff{}
	}
	err := ho.release(ctx, h.s, h.node.path, h.waited)
	if err == nil || err == zk.ErrNoNode {
		return nil
	}
	h.s.deleteEventually(h.node.path, h.node.gen.id)
	return fmt.Errorf("%w: %s: %w", ErrReleaseDeferred, h.s.rel(h.node.path), err)
}

// selfWatchGrace is how long a hold granted without a watch on its node
// goes before it sets one: a shorter hold costs no request
// (docs/design-locks.md, "Watching one's own node late").
var selfWatchGrace = 10 * time.Millisecond // a var for tests only
