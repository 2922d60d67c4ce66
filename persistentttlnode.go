package zkrecipes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// TTLTouchChild is the name of the child a PersistentTtlNode keeps
// touching under its node, Curator's DEFAULT_CHILD_NODE_NAME.
const TTLTouchChild = "touch"

// PersistentTtlNode keeps a TTL node holding data in ZooKeeper for as
// long as it runs, and lets it expire some time after it stops, in the
// layout of Curator's PersistentTtlNode: the node, in mode
// ModePersistentWithTTL, holds the data and is kept by a PersistentNode;
// a child "touch" (TTLTouchChild), also a TTL node with the same TTL and
// 0 bytes of data, is set every ttl/2, or created again when it is gone.
// While the child is touched the node has a child, so the server deletes
// neither; once the touching stops (the process died, or was cut off from
// ZooKeeper for longer than the TTL), the child expires after the TTL,
// and the node, childless and unchanged, some time after. Readers find the
// data at the node, as Curator's do; a Curator PersistentTtlNode and this
// one on the same path keep the same node.
//
// The server deletes an expired TTL node when it next checks (every
// minute by default, the server's znode.container.checkIntervalMs), not
// at once: a node outlives its TTL by up to that much.
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

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when the toucher has ended
}

// NewPersistentTtlNode returns a PersistentTtlNode that keeps a TTL node
// at path (relative to the Session's namespace) holding data (nil: 0
// bytes), with time to live ttl (1ms to 2^40-1 ms). Its missing parents
// are created as containers. The caller may not modify data afterwards.
// Errors in the arguments are returned by Start.
func NewPersistentTtlNode(s *Session, path string, ttl time.Duration, data []byte) *PersistentTtlNode {
	t := &PersistentTtlNode{s: s, ttl: ttl, done: make(chan struct{}),
		node: NewPersistentNode(s, path, data, WithCreateMode(ModePersistentWithTTL), WithNodeTTL(ttl))}
	t.err = t.node.err
	if t.err == nil {
		t.child = joinPath(t.node.abs, TTLTouchChild)
	}
	return t
}

// Start starts keeping the node and touching its child in the background
// and returns at once; WaitInPlace waits for the node. It fails as
// PersistentNode.Start does.
func (t *PersistentTtlNode) Start() error {
	if t.err != nil {
		return t.err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed { // the node is being closed, or soon will be
		return &startAfterClose{once: ErrNodeStarted}
	}
	if err := t.node.Start(); err != nil {
		return err
	}
	t.started = true
	ctx, cancel := ctxUntil(t.s.closedCh)
	t.cancel = cancel
	if !t.s.spawn(func() { defer close(t.done); t.touchLoop(ctx) }) {
		cancel()
		close(t.done)
	}
	return nil
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
// it. Close is idempotent.
func (t *PersistentTtlNode) Close(ctx context.Context) error {
	if t.err != nil {
		return nil
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	t.mu.Lock()
	first := !t.closed
	t.closed = true
	started, cancel := t.started, t.cancel
	t.mu.Unlock()
	if first && started {
		cancel()
		<-t.done
		if !t.s.isClosed() {
			// The node cannot be deleted while it has its child. A failed
			// delete leaves the child to expire; the node's delete then
			// goes on in the background until it has.
			if err := t.s.delete(ctx, t.child); err != nil && err != zk.ErrNoNode {
				t.s.cfg.log.Info("zkrecipes: ttl node's touch child not deleted; it expires", "path", t.s.rel(t.child), "err", err)
			}
		}
	}
	return t.node.Close(ctx)
}

// touchLoop touches the child once the node is first in place, then every
// ttl/2, until ctx ends.
func (t *PersistentTtlNode) touchLoop(ctx context.Context) {
	for {
		st, ch := t.node.Status()
		if st.InPlace {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
	tick := time.NewTicker(max(t.ttl/2, time.Millisecond))
	defer tick.Stop()
	for {
		if err := t.touch(ctx); err != nil && ctx.Err() == nil {
			t.s.cfg.log.Debug("zkrecipes: ttl node's touch failed; will try again", "path", t.s.rel(t.child), "err", err)
		}
		select {
		case <-tick.C:
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
