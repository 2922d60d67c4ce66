package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// CreateMode says what kind of node a PersistentNode keeps.
type CreateMode int

const (
	// ModeEphemeral: an ephemeral node at the path given; it ends with the
	// ZooKeeper session, and the PersistentNode makes it again on the next.
	ModeEphemeral CreateMode = iota
	// ModeEphemeralSequential: an ephemeral node under the path's parent,
	// named "_c_<uuid>-<name>" followed by the sequence number.
	ModeEphemeralSequential
	// ModePersistent: a persistent node at the path given.
	ModePersistent
	// ModePersistentSequential: a persistent sequential node with a
	// protected name, as ModeEphemeralSequential.
	ModePersistentSequential
)

func (m CreateMode) String() string {
	switch m {
	case ModeEphemeral:
		return "EPHEMERAL"
	case ModeEphemeralSequential:
		return "EPHEMERAL_SEQUENTIAL"
	case ModePersistent:
		return "PERSISTENT"
	case ModePersistentSequential:
		return "PERSISTENT_SEQUENTIAL"
	case ModeContainer:
		return "CONTAINER"
	case ModePersistentWithTTL:
		return "PERSISTENT_WITH_TTL"
	case ModePersistentSequentialWithTTL:
		return "PERSISTENT_SEQUENTIAL_WITH_TTL"
	}
	return fmt.Sprintf("CreateMode(%d)", int(m))
}

func (m CreateMode) ephemeral() bool { return m == ModeEphemeral || m == ModeEphemeralSequential }

// reaped tells whether the server deletes such a node on its own: a
// container once its last child is gone, a TTL node once it has had no
// change and no child for its TTL.
func (m CreateMode) reaped() bool {
	return m == ModeContainer || m == ModePersistentWithTTL || m == ModePersistentSequentialWithTTL
}
func (m CreateMode) sequential() bool {
	return m == ModeEphemeralSequential || m == ModePersistentSequential || m == ModePersistentSequentialWithTTL
}

func (m CreateMode) flags() int32 {
	var f int32
	if m.ephemeral() {
		f |= zk.FlagEphemeral
	}
	if m.sequential() {
		f |= zk.FlagSequence
	}
	return f
}

// PersistentNodeOption configures NewPersistentNode.
type PersistentNodeOption func(*persistentNodeConfig)

type persistentNodeConfig struct {
	mode CreateMode
	err  error
	ttl  time.Duration // WithNodeTTL (persistentnode_modes.go)
}

// WithCreateMode sets the kind of node kept: any CreateMode, the
// container and TTL modes too (a TTL mode needs WithNodeTTL). A container
// or TTL node that the server deletes (its last child gone, its TTL
// passed) is created again, as a deleted node is, while the
// PersistentNode runs. The default is ModeEphemeral.
func WithCreateMode(m CreateMode) PersistentNodeOption {
	return func(c *persistentNodeConfig) {
		if m < ModeEphemeral || m > ModePersistentSequentialWithTTL {
			c.err = invalidArg("unknown CreateMode %d", int(m))
		}
		c.mode = m
	}
}

// NodeStatus is what a PersistentNode knows of its node.
type NodeStatus struct {
	// InPlace is true while the node is known to exist with the data last
	// set: from the create (or the check after a reconnection) until the
	// connection is suspended or the node is seen deleted.
	InPlace bool
	// Path is the node's path, relative to the Session's namespace (for a
	// sequential mode, the name the server gave it); "" before the first
	// create.
	Path string
	// Err is the error of the last failed attempt to put the node in
	// place (nil once it is in place), such as ErrNotAuthorized when the
	// parent's ACL refuses the Session; after the keeper has stopped, the
	// failure of the Session's security that stopped it (ErrAuthFailed,
	// ...), or nil.
	Err error
}

// PersistentNode keeps a node in ZooKeeper for as long as it runs, as
// Curator's PersistentNode: it creates the node, and creates it again
// when the ZooKeeper session that owned it expires or another client
// deletes it. Missing parents are created as containers.
//
// There is never more than one node per PersistentNode: a create whose
// reply is lost is looked for before another is sent (sequential modes
// carry a protected name for that), and an ephemeral node left by an
// earlier ZooKeeper session of this PersistentNode is deleted before a
// new one is made. A node of the same path that another client made is
// adopted and its data overwritten, as Curator does.
//
// Status tells whether the node is in place: a service can
// report itself ready only while it is. Between a suspension and the
// check after the reconnection the node may exist without Status saying
// so; never the other way round, except for the time it takes the
// server's notification of a deletion to arrive. With WithFlapDamping,
// that check waits until the connection has settled.
//
// NewPersistentNode does no I/O. A PersistentNode is safe for concurrent
// use. It runs from Start until Close or the Session's Close; no goroutine
// of it is left after either.
type PersistentNode struct {
	s    *Session
	path string // relative, as given
	abs  string
	cfg  persistentNodeConfig
	err  error
	uuid string // of the protected name, for the sequential modes

	wake chan struct{} // SetData asks the keeper to look again
	done chan struct{} // closed when the keeper has ended

	mu       sync.Mutex
	data     []byte
	dataVer  uint64 // bumped by SetData
	written  uint64 // the dataVer the node is known to hold
	node     string // absolute path of the current node ("" none known)
	mine     map[int64]bool
	status   NodeStatus
	changed  chan struct{}
	started  bool
	closed   bool
	cancel   context.CancelFunc
	closeErr error
	closeEnd chan struct{} // closed once the first Close has returned

	// abandoned: a Start that failed closed the node (abandon); Close
	// then returns nil.
	abandoned bool

	// beforeUndo, if set, runs before a failed Start's clean-up: a seam
	// for tests only, which pause there.
	beforeUndo func()

	// mayExist: a create was sent whose reply was not a refusal: a node
	// may exist that Close must delete.
	mayExist bool

	// replaceKind: a node found at the path is one an earlier
	// PersistentNode of this Session left (keeper only, until the first
	// node is in place); if its kind is not this mode's, it is replaced.
	replaceKind bool
}

// NewPersistentNode returns a PersistentNode that keeps a node at path
// (relative to the Session's namespace) holding data (nil: 0 bytes); for
// the sequential modes, path's last element is the name the node's name
// ends with. The caller may not modify data afterwards. Errors in the
// arguments, and data too large for the Session's request size limit
// (ErrDataTooLarge, see WithMaxRequestSize), are returned by Start.
func NewPersistentNode(s *Session, path string, data []byte, opts ...PersistentNodeOption) *PersistentNode {
	n := &PersistentNode{s: s, path: path, data: data, dataVer: 1, wake: make(chan struct{}, 1),
		done: make(chan struct{}), mine: map[int64]bool{}, changed: make(chan struct{}), uuid: newUUID(),
		closeEnd: make(chan struct{})}
	n.err = checkRecipe(s, path)
	for _, o := range opts {
		if o == nil {
			n.err = invalidArg("nil PersistentNodeOption")
			continue
		}
		o(&n.cfg)
	}
	if n.err == nil {
		n.err = n.cfg.err
	}
	if n.err == nil {
		n.err = n.cfg.checkTTL()
	}
	if n.err == nil && path == "/" {
		n.err = invalidArg("a PersistentNode cannot keep the root")
	}
	if n.err == nil {
		n.abs = s.abs(path)
		n.err = n.checkData(data)
	}
	return n
}

// checkData reports data too large for the node's create.
func (n *PersistentNode) checkData(data []byte) error {
	node := n.abs
	if n.cfg.mode.sequential() {
		node = protectedNode(parentPath(n.abs), baseName(n.abs))
	}
	return n.s.checkNodeData(n.path, data, node)
}

// Start starts keeping the node and waits, within ctx, until it is first
// in place: ctx bounds only that wait, never the node's life, which lasts
// until Close or the Session's Close. It returns nil once the node is in
// place. It fails with ctx's error when ctx ends first (even while cut off
// from the server); with ErrNotAuthorized (the parent's ACL does not let
// the Session create the node, also matching zk.ErrNoAuth),
// ErrInvalidACL (the Session's WithACL), ErrTTLUnsupported, or a failure
// of the Session's security that ended it (ErrAuthFailed, ...), which no
// retry can mend; with ErrNodeStarted when called twice, ErrClosed (also
// matching ErrNodeStarted) after or during Close, ErrClosed after the
// Session's Close, and ErrInvalidPath, ErrInvalidArgument, ErrNilSession
// or ErrDataTooLarge for bad arguments. A Start that fails has stopped
// what it began: a node it may have made is deleted in the background (a
// Close meanwhile waits for that delete within its own ctx, and returns
// nil), and a later Start returns ErrNodeStarted.
func (n *PersistentNode) Start(ctx context.Context) error {
	if n.err != nil {
		return n.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	if err := n.launch(); err != nil {
		return err
	}
	if err := n.WaitInPlace(ctx); err != nil {
		n.mu.Lock()
		closing := n.closed
		n.mu.Unlock()
		if closing && errors.Is(err, ErrClosed) && !n.s.isClosed() {
			err = &startAfterClose{once: ErrNodeStarted} // a Close came during Start
		}
		n.abandon()
		return err
	}
	return nil
}

// launch starts the keeper, once.
func (n *PersistentNode) launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return &startAfterClose{once: ErrNodeStarted}
	}
	if n.started {
		return ErrNodeStarted
	}
	n.started = true
	ctx, cancel := ctxUntil(n.s.closedCh)
	n.cancel = cancel
	if !n.s.spawn(func() { defer close(n.done); n.keep(ctx) }) {
		cancel()
		close(n.done)
		return ErrClosed
	}
	return nil
}

// abandon undoes a Start that failed: it stops the keeper and deletes
// what it may have made, in the background (its requests may wait for as
// long as the connection is cut off), on a goroutine the Session's Close
// waits for. A Close meanwhile waits for it and returns nil. When a Close
// came during Start, that Close does the work.
func (n *PersistentNode) abandon() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed, n.abandoned = true, true
	stop := n.cancel
	n.mu.Unlock()
	// The keeper stops now, not when the clean-up runs: a keeper started
	// at the path after Start returns must not meet this one at work.
	stop()
	undo := func(ctx context.Context) {
		if n.beforeUndo != nil {
			n.beforeUndo()
		}
		// Start returned its own error, and a Close returns nil: what the
		// clean-up could not do (a persistent node left by the Session's
		// Close, ErrNodeLeft; a delete gone to the background) is logged.
		if err := n.finish(ctx); err != nil {
			n.s.cfg.log.Warn("zkrecipes: persistent node: the clean-up of a Start that failed did not complete", "path", n.path, "err", err)
		}
	}
	if !n.s.goBackground(0, undo) {
		undo(context.Background()) // the Session is closed: nothing waits on the server
	}
}

// Status returns what the PersistentNode knows of its node now, and a
// channel that is closed at the next change of it.
func (n *PersistentNode) Status() (NodeStatus, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.status, n.changed
}

// WaitInPlace waits until the node is in place. It returns nil then,
// ctx's error if ctx ends first, and ErrClosed if the node or its Session
// is closed (or was never started). It returns at once, with the error of
// the last attempt, when ZooKeeper refused it in a way no retry can mend:
// ErrNotAuthorized (the parent's ACL does not let the Session create the
// node, matching zk.ErrNoAuth too), ErrInvalidACL (the Session's
// WithACL), or a failure of the Session's security that ended it
// (ErrAuthFailed, ...). The PersistentNode keeps trying meanwhile, no
// more often than every 2 s, in case the ACL is changed (Close stops it).
func (n *PersistentNode) WaitInPlace(ctx context.Context) error {
	if n.err != nil {
		return n.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	for {
		st, ch := n.Status()
		if st.InPlace {
			return nil
		}
		if refused(st.Err) {
			return st.Err
		}
		n.mu.Lock()
		stopped := n.closed || !n.started
		n.mu.Unlock()
		if stopped {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-n.done:
			if st, _ := n.Status(); refused(st.Err) {
				return st.Err
			}
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Data returns the data last set (by NewPersistentNode or SetData). The
// caller must not modify it.
func (n *PersistentNode) Data() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.data
}

// SetData sets the node's data (nil: 0 bytes), now if the node is in
// place, else when it is next created. It returns nil once the node holds
// data, or the error of the write (ctx's error, a lost connection): the
// data is kept and written when the node is next checked. It fails with
// ErrClosed after Close, and with ErrDataTooLarge for data too large for
// the Session's request size limit, sending nothing: the node keeps the
// data it had. The caller may not modify data afterwards.
func (n *PersistentNode) SetData(ctx context.Context, data []byte) error {
	if n.err != nil {
		return n.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	if err := n.checkData(data); err != nil {
		return err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	n.data = data
	n.dataVer++
	ver, node, started := n.dataVer, n.node, n.started
	n.mu.Unlock()
	if !started || node == "" {
		return nil
	}
	_, err := call(ctx, n.s, "setData", node, func() (*zk.Stat, error) { return n.s.sendSet(node, data, -1) }, nil)
	switch {
	case err == nil:
		n.mu.Lock()
		if n.written < ver && n.node == node {
			n.written = ver
		}
		n.mu.Unlock()
		return nil
	case err == zk.ErrNoNode:
		n.poke() // made again with data
		return nil
	}
	n.poke()
	return fmt.Errorf("zkrecipes: set data of %s: %w", n.s.rel(node), err)
}

// Close stops keeping the node and deletes it. It returns nil once the
// node is gone, or ErrReleaseDeferred when the delete could not be
// confirmed before ctx ended or with the connection down: the node is
// then deleted in the background while the Session stays open (an
// ephemeral node ends with its session at the latest; a persistent one
// stays if the Session is closed first, which is logged). After the
// Session's Close, an ephemeral node has ended with the session and Close
// returns nil, while a persistent one (ModePersistent,
// ModePersistentSequential) stays: Close returns ErrNodeLeft, naming it.
// When ZooKeeper refuses the delete (ErrNotAuthorized: the parent's ACL
// changed), Close returns that error and the node stays; it returns nil
// when every create was refused, as no node was made. Close is
// idempotent and safe to call concurrently: later calls wait for the
// first (within their own ctx, ErrReleaseDeferred when it ends first) and
// return what it did. After a Start that failed, Close waits for that
// Start's clean-up and returns nil. A node at a fixed path (every mode but
// the sequential ones) that another PersistentNode of the Session keeps by
// then, started at the same path since, is left to it: Close deletes
// nothing (and returns nil), nor does the background delete of an earlier
// Close.
func (n *PersistentNode) Close(ctx context.Context) error {
	if n.err != nil {
		return nil
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		select { // the first Close (or a failed Start's undo) may still be deleting the node
		case <-n.closeEnd:
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.abandoned {
				return nil // Start reported the failure
			}
			return n.closeErr
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w", ErrReleaseDeferred, n.path, ctx.Err())
		}
	}
	n.closed = true
	n.mu.Unlock()
	return n.finish(ctx)
}

// finish is the first Close's work (n.closed set): it stops the keeper and
// deletes the node.
func (n *PersistentNode) finish(ctx context.Context) error {
	n.mu.Lock()
	started, cancel := n.started, n.cancel
	n.mu.Unlock()
	defer close(n.closeEnd)
	if !started {
		return nil
	}
	cancel()
	<-n.done
	err := n.remove(ctx)
	n.mu.Lock()
	n.closeErr = err
	n.node = ""
	n.setStatusLocked(NodeStatus{Path: n.status.Path})
	n.mu.Unlock()
	return err
}

// remove deletes the node on Close: every node carrying the protected
// name for the sequential modes (a create may have been in flight), the
// path for the others.
func (n *PersistentNode) remove(ctx context.Context) error {
	if n.s.isClosed() {
		return n.left()
	}
	if n.cfg.mode.sequential() {
		err := n.s.deleteProtected(ctx, parentPath(n.abs), n.uuid)
		if err == nil {
			return nil
		}
		closeErr, retry := n.removeFailed(err)
		if retry {
			n.s.cleanupProtected(parentPath(n.abs), n.uuid)
		}
		return closeErr
	}
	// Called off (nil) when a keeper started at the path since holds it.
	dd, err := n.s.deleteFirst(ctx, n.abs)
	if dd == nil {
		return nil
	}
	closeErr, retry := n.removeFailed(err)
	var owner int64 // persistent: logged if the Session closes first
	if n.cfg.mode.ephemeral() {
		owner = n.s.SessionID()
	}
	if retry {
		n.s.deleteEventuallyAs(n.abs, owner, dd)
	} else {
		n.s.undefer(n.abs, dd)
	}
	return closeErr
}

// removeFailed is what Close returns after its delete failed with err,
// and whether the delete goes on in the background.
func (n *PersistentNode) removeFailed(err error) (closeErr error, retry bool) {
	if n.s.isClosed() { // closed while the delete ran
		return n.left(), false
	}
	if refused(err) { // no retry would be let through either
		n.mu.Lock()
		never := !n.mayExist && n.node == ""
		n.mu.Unlock()
		if never {
			return nil, false // every create was refused: there is no node
		}
		n.s.cfg.log.Error("zkrecipes: persistent node's delete refused; it stays", "path", n.path, "err", err)
		return err, false
	}
	if err == zk.ErrNotEmpty && n.cfg.mode.reaped() {
		// No delete can pass while it has children; the server deletes
		// it once they are gone (a TTL node's touch child expires).
		n.s.cfg.log.Info("zkrecipes: persistent node not deleted: it has children; the server reaps it once they are gone", "path", n.path)
	} else {
		retry = true
	}
	return fmt.Errorf("%w: %s: %w", ErrReleaseDeferred, n.path, err), retry
}

// left is what Close returns once the Session is closed: nil for an
// ephemeral node, which ended with the session (Close's own clean-up
// ran), and ErrNodeLeft, naming the node, for a persistent one.
func (n *PersistentNode) left() error {
	if n.cfg.mode.ephemeral() {
		return nil
	}
	n.mu.Lock()
	node := n.node
	n.mu.Unlock()
	switch {
	case node != "":
		return fmt.Errorf("%w: %s", ErrNodeLeft, n.s.rel(node))
	case n.cfg.mode.sequential():
		return fmt.Errorf("%w: %s (if its create went through)", ErrNodeLeft,
			joinPath(parentPath(n.path), protectedName(n.uuid, baseName(n.path))+"<sequence>"))
	}
	return fmt.Errorf("%w: %s (if its create went through)", ErrNodeLeft, n.path)
}

// poke asks the keeper to check the node again.
func (n *PersistentNode) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// setStatusLocked records st and wakes the Status watchers if it changed.
func (n *PersistentNode) setStatusLocked(st NodeStatus) {
	if st.InPlace == n.status.InPlace && st.Path == n.status.Path && errors.Is(st.Err, n.status.Err) && errors.Is(n.status.Err, st.Err) {
		return
	}
	n.status = st
	close(n.changed)
	n.changed = make(chan struct{})
}

func (n *PersistentNode) setStatus(inPlace bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := NodeStatus{InPlace: inPlace, Path: n.status.Path, Err: err}
	if n.node != "" {
		st.Path = n.s.rel(n.node)
	}
	n.setStatusLocked(st)
}
