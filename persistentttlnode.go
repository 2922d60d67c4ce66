package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// TTLTouchChild is the name of the child a PersistentTtlNode keeps
// touching under its node, Curator's DEFAULT_CHILD_NODE_NAME.
const TTLTouchChild = "touch"

// PersistentTtlNode keeps a node holding data in ZooKeeper for as long as
// it runs, and lets the server delete it some time after it stops: the
// TTL after its last touch, plus up to the server's check interval
// (znode.container.checkIntervalMs, a minute by default). It stops when
// Close is called, when the process dies, or when it is cut off from
// ZooKeeper for longer than the TTL. Readers find the data at the node, as
// Curator's PersistentTtlNode's readers do: the layout is Curator's (a
// node with a TTL child "touch", TTLTouchChild, set every ttl/2; see
// docs/ttl-and-compression.md), so either library reads the other's.
//
// The servers must run with zookeeper.extendedTypesEnabled=true: else
// they refuse the create, and WaitInPlace returns ErrTTLUnsupported.
//
// NewPersistentTtlNode does no I/O. A PersistentTtlNode is safe for
// concurrent use; it runs from Start until Close or the Session's Close,
// and no goroutine of it is left after either.
type PersistentTtlNode struct {
	node  *PersistentNode
	s     *Session
	ttl   time.Duration
	child string // absolute path of the touch child
	err   error

	mu        sync.Mutex
	started   bool
	closed    bool
	abandoned bool // a Start that failed closed it
	cancel    context.CancelFunc
	done      chan struct{} // closed when the toucher has ended
	closeEnd  chan struct{} // closed once the first Close (or abandon) has ended
	closeErr  error
}

// NewPersistentTtlNode returns a PersistentTtlNode that keeps a TTL node
// at path (relative to the Session's namespace) holding data (nil: 0
// bytes), with time to live ttl (1ms to 2^40-1 ms). Its missing parents
// are created as containers. The caller may not modify data afterwards.
// Errors in the arguments are returned by Start.
func NewPersistentTtlNode(s *Session, path string, ttl time.Duration, data []byte) *PersistentTtlNode {
	t := &PersistentTtlNode{s: s, ttl: ttl, done: make(chan struct{}), closeEnd: make(chan struct{}),
		node: NewPersistentNode(s, path, data, WithCreateMode(ModePersistentWithTTL), WithNodeTTL(ttl))}
	t.err = t.node.err
	if t.err == nil {
		t.child = joinPath(t.node.abs, TTLTouchChild)
	}
	return t
}

// Start starts keeping the node and touching its child, and waits within
// ctx until the node is first in place, as PersistentNode's Start does
// (ctx bounds only that wait); it fails as PersistentNode's Start does,
// with ErrTTLUnsupported at once when the servers refuse TTL nodes. A
// Start that fails has stopped what it began, as PersistentNode's.
func (t *PersistentTtlNode) Start(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	t.mu.Lock()
	if t.closed { // the node is being closed, or soon will be
		t.mu.Unlock()
		return &startAfterClose{once: ErrNodeStarted}
	}
	if err := t.node.launch(); err != nil {
		t.mu.Unlock()
		return err
	}
	t.started = true
	run, cancel := t.s.untilEnded() // a Session lost for good touches nothing
	t.cancel = cancel
	if !t.s.spawn(func() { defer close(t.done); t.touchLoop(run) }) {
		cancel()
		close(t.done)
	}
	t.mu.Unlock()
	if err := t.node.WaitInPlace(ctx); err != nil {
		t.mu.Lock()
		closing := t.closed
		t.mu.Unlock()
		if closing && errors.Is(err, ErrClosed) && !t.s.isClosed() {
			err = &startAfterClose{once: ErrNodeStarted} // a Close came during Start
		}
		t.abandon()
		return err
	}
	return nil
}

// abandon undoes a Start that failed, in the background, as
// PersistentNode's abandon does.
func (t *PersistentTtlNode) abandon() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed, t.abandoned = true, true
	t.mu.Unlock()
	undo := func(ctx context.Context) { _ = t.finish(ctx) }
	if !t.s.goBackground(0, undo) {
		undo(context.Background())
	}
}

// WaitInPlace waits until the node is in place, as PersistentNode's
// WaitInPlace does; it returns ErrTTLUnsupported at once when the server
// refuses TTL nodes.
func (t *PersistentTtlNode) WaitInPlace(ctx context.Context) error {
	return t.node.WaitInPlace(ctx)
}

// Status returns what the PersistentTtlNode knows of its node now (the
// node holding the data, not its touch child), and a channel that is
// closed at the next change of it.
func (t *PersistentTtlNode) Status() (NodeStatus, <-chan struct{}) { return t.node.Status() }

// Data returns the data last set. The caller must not modify it.
func (t *PersistentTtlNode) Data() []byte { return t.node.Data() }

// SetData sets the node's data, as PersistentNode's SetData does.
func (t *PersistentTtlNode) SetData(ctx context.Context, data []byte) error {
	return t.node.SetData(ctx, data)
}

// Close stops touching the child, deletes it, and deletes the node, as
// PersistentNode's Close does, with the same results (ErrReleaseDeferred
// when the deletes could not be confirmed: the node then expires after
// its TTL at the latest, since nothing touches it any more). Curator's
// PersistentTtlNode deletes nothing on close and leaves both nodes to
// expire: a reader that must see the node until the TTL passes after the
// owner stops should not rely on Close, but on the owner's exit without
// it. Close is idempotent and safe to call concurrently: later calls wait
// for the first within their own ctx (ErrReleaseDeferred when it ends
// first) and return what it did; after a Start that failed, Close waits
// for its clean-up and returns nil.
func (t *PersistentTtlNode) Close(ctx context.Context) error {
	if t.err != nil {
		return nil
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		select { // the first Close (or a failed Start's undo) may still be deleting
		case <-t.closeEnd:
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.abandoned {
				return nil // Start reported the failure
			}
			return t.closeErr
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w", ErrReleaseDeferred, t.node.path, ctx.Err())
		}
	}
	t.closed = true
	t.mu.Unlock()
	return t.finish(ctx)
}

// finish is the first Close's work (t.closed set): it stops the toucher,
// deletes the touch child, then the node.
func (t *PersistentTtlNode) finish(ctx context.Context) error {
	defer close(t.closeEnd)
	t.mu.Lock()
	started, cancel := t.started, t.cancel
	t.mu.Unlock()
	if started {
		cancel()
		<-t.done
		if !t.s.isClosed() {
			// The node cannot be deleted while it has its child. A failed
			// delete leaves the child to expire, and the node after it.
			if err := t.s.delete(ctx, t.child); err != nil && err != zk.ErrNoNode {
				t.s.cfg.log.Info("zkrecipes: ttl node's touch child not deleted; it expires", "path", t.s.rel(t.child), "err", err)
			}
		}
	}
	err := t.node.Close(ctx)
	t.mu.Lock()
	t.closeErr = err
	t.mu.Unlock()
	return err
}

// touchLoop touches the child whenever the node comes (back) in place,
// then every ttl/2 while it stays, and a failed touch again after ttl/8,
// until ctx ends: a touch missed at a reconnection does not wait for the
// next period, which would leave the child no slack before its TTL.
func (t *PersistentTtlNode) touchLoop(ctx context.Context) {
	period, again := max(t.ttl/2, time.Millisecond), max(t.ttl/8, time.Millisecond)
	timer := time.NewTimer(period)
	defer timer.Stop()
	for {
		st, changed := t.node.Status()
		var next <-chan time.Time // none while the node is not in place
		if st.InPlace {
			wait := period
			if err := t.touch(ctx); err != nil && ctx.Err() == nil {
				t.s.cfg.log.Debug("zkrecipes: ttl node's touch failed; will try again", "path", t.s.rel(t.child), "err", err)
				wait = again
			}
			timer.Reset(wait)
			next = timer.C
		}
		select {
		case <-next:
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// touch sets the child's data, or creates it when it is gone. A missing
// node (expired, deleted) is the PersistentNode's to make again; the
// child follows at the next touch.
func (t *PersistentTtlNode) touch(ctx context.Context) error {
	_, err := call(ctx, t.s, "setData", t.child, func() (*zk.Stat, error) { return t.s.sendSet(t.child, nil, -1) }, nil)
	if err != zk.ErrNoNode {
		return err
	}
	_, err = call(ctx, t.s, "create", t.child, func() (string, error) {
		return t.s.sendCreateTTL(t.child, nil, zk.FlagTTL, t.ttl)
	}, nil)
	switch err {
	case nil, zk.ErrNoNode, zk.ErrNodeExists: // made; its node is gone; made meanwhile
		return nil
	}
	return fmt.Errorf("zkrecipes: touch %s: %w", t.s.rel(t.child), err)
}
