package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// The node operations: what CuratorFramework's create(), setData(),
// delete() and setACL() give Java, on the Session. Each names its node
// relative to the Session's namespace and goes through the request seam
// (requests.go, writes.go), which checks its size, types a refusal and
// reports it to the Tracer and Observer.
//
// Which calls are sent again after a lost connection (the retry policy
// paces them), and why it is safe:
//   - a read, a Sync, an unversioned Set or SetACL, an unversioned
//     Delete: applying them twice leaves what applying them once does (a
//     Delete that finds its node gone on a later try has it gone);
//   - a versioned Set, SetACL or Delete, once a read after a sync shows
//     the same node (created before the write was sent: its czxid) still
//     at the version given: the write was not applied. A node made again
//     on the path since may be at that version too, and is never written;
//   - a protected Create, once its node was looked for by its UUID.
//
// An unprotected Create is not: another client may have made or used the
// node meanwhile, and a sequential one would make a second node. Its lost
// reply is ErrOutcomeUnknown, as a versioned write's that no read
// settles.

// More kinds of node, for Create and CreateOp (WithMode), and for
// PersistentNode (WithCreateMode; a TTL mode with WithNodeTTL).
const (
	// ModeContainer: a container node, which the server deletes once its
	// last child has gone (a container that never had a child stays).
	ModeContainer CreateMode = ModePersistentSequential + 1 + iota
	// ModePersistentWithTTL: a persistent node that the server deletes
	// once it has had no children and no change for its TTL (WithTTL).
	ModePersistentWithTTL
	// ModePersistentSequentialWithTTL: ModePersistentWithTTL, sequential.
	ModePersistentSequentialWithTTL
)

// createFlags returns the create flags of m, and whether it is a TTL mode.
func createFlags(m CreateMode) (int32, bool) {
	switch m {
	case ModeContainer:
		return zk.FlagContainer, false
	case ModePersistentWithTTL:
		return zk.FlagTTL, true
	case ModePersistentSequentialWithTTL:
		return zk.FlagPersistentSequentialWithTTL, true
	}
	return m.flags(), false
}

// Create creates the node at path (relative to the Session's namespace)
// holding data (nil: 0 bytes) under the Session's ACL, and returns its
// path relative to the namespace: for a sequential mode, the name the
// server gave it. Options: WithMode (default ModePersistent), WithTTL,
// WithProtection, WithParents.
//
// Without WithProtection, Create is not retried: if its reply is lost
// with the connection, or ctx ends while it is on its way, it returns an
// error matching ErrOutcomeUnknown and its cause, and the node may or may
// not have been made. With WithProtection, it is retried under the
// Session's retry policy and never makes two nodes; if it fails all the
// same (ctx ends, the policy gives up), whatever it may have made is
// deleted in the background. A protected ephemeral node made under an
// older ZooKeeper session is deleted, never returned.
//
// It fails with ErrNodeExists, ErrNoNode (a missing parent, without
// WithParents), ErrNoChildrenForEphemerals, ErrNotAuthorized,
// ErrInvalidACL, ErrDataTooLarge, ErrInvalidPath, ErrInvalidArgument (a
// bad option or a nil ctx), ErrNilSession or ErrClosed. An ephemeral node
// belongs to the Session's current ZooKeeper session and ends with it.
func (s *Session) Create(ctx context.Context, path string, data []byte, opts ...NodeOption) (string, error) {
	c, err := s.checkNodeCall(ctx, path, "Create", opts, "WithMode", "WithTTL", "WithProtection", "WithParents")
	if err != nil {
		return "", err
	}
	flags, ttl, err := c.createFlags()
	if err != nil {
		return "", err
	}
	abs := s.abs(path)
	stored := storedPath(abs, flags)
	if c.protected {
		stored = storedPath(protectedNode(parentPath(abs), baseName(abs)), flags&^zk.FlagSequence)
	}
	if err := s.checkNodeData(path, data, stored); err != nil {
		return "", err
	}
	var p string
	if c.protected {
		var n ownNode
		n, err = s.createProtectedNode(ctx, protectedCreate{dir: parentPath(abs), uuid: newUUID(), name: baseName(abs),
			data: data, flags: flags, ttl: ttl, parents: c.parents})
		p = n.path
	} else {
		p, err = s.createNode(ctx, abs, data, flags, ttl, c.parents)
	}
	if err != nil {
		return "", s.nodeErr("create", abs, err)
	}
	return s.rel(p), nil
}

// createFlags checks the mode and TTL options together and returns the
// create flags and the TTL.
func (c nodeConfig) createFlags() (int32, time.Duration, error) {
	flags, isTTL := createFlags(c.mode)
	switch {
	case isTTL && c.ttl == 0:
		return 0, 0, invalidArg("%v needs WithTTL", c.mode)
	case !isTTL && c.ttl != 0:
		return 0, 0, invalidArg("WithTTL needs a TTL mode (ModePersistentWithTTL, ModePersistentSequentialWithTTL), not %v", c.mode)
	}
	return flags, c.ttl, nil
}

// sendCreateFlags sends the create of path with flags (and ttl in a TTL
// mode): a container, a TTL node or any other.
func (s *Session) sendCreateFlags(path string, data []byte, flags int32, ttl time.Duration) (string, error) {
	if ttl > 0 {
		return s.sendCreateTTL(path, data, flags, ttl)
	}
	return s.sendCreate(path, data, flags)
}

// createNode makes one create of path once connected (and, with parents,
// one more after creating the missing parents as containers).
func (s *Session) createNode(ctx context.Context, path string, data []byte, flags int32, ttl time.Duration, parents bool) (string, error) {
	for {
		if err := s.readyToSend(ctx); err != nil {
			return "", err
		}
		p, err := call(ctx, s, "create", path, func() (string, error) {
			return s.sendCreateFlags(path, data, flags, ttl)
		}, func(p string, err error) {
			if err == nil && flags&zk.FlagEphemeral != 0 {
				s.own(p) // made after ctx ended: Close deletes it on an adopted connection
			}
		})
		switch {
		case err == ErrClosed: // closed before it was sent
			return "", err
		case err == nil:
			if flags&zk.FlagEphemeral != 0 {
				s.own(p)
			}
			return p, nil
		case err == zk.ErrNoNode && parents:
			parents = false
			if err := s.ensureParents(ctx, parentPath(path)); err != nil {
				return "", err
			}
			continue
		case replyLost(ctx, err):
			return "", outcomeUnknown("create", s.rel(path), err)
		}
		return "", err
	}
}

// Set writes data (nil: 0 bytes) to the node at path (relative to the
// Session's namespace) and returns its new Stat. With WithVersion(v) it
// writes only while the node's data version is v, else fails with
// ErrBadVersion.
//
// A write whose reply is lost with the connection is sent again under the
// Session's retry policy when that cannot apply it twice: always without
// a version, and with one while the node it was meant for is still at
// version v. Otherwise (the node moved past v, or was made again), or
// when ctx ends while the write is on its way, it returns an error
// matching ErrOutcomeUnknown and its cause: it may have been applied.
// It fails with ErrNoNode, ErrBadVersion, ErrNotAuthorized,
// ErrDataTooLarge, ErrInvalidPath, ErrInvalidArgument, ErrNilSession,
// ErrClosed, ErrRetriesExhausted, or ctx's error before the write was
// sent.
func (s *Session) Set(ctx context.Context, path string, data []byte, opts ...NodeOption) (*NodeStat, error) {
	c, err := s.checkNodeCall(ctx, path, "Set", opts, "WithVersion")
	if err != nil {
		return nil, err
	}
	abs := s.abs(path)
	if err := s.checkNodeData(path, data, abs); err != nil {
		return nil, err
	}
	st, err := writeRetry(ctx, s, "setData", abs, func() (*zk.Stat, error) { return s.setVersioned(ctx, abs, data, c.version) },
		c.version, func(st *zk.Stat) int32 { return st.Version })
	return newNodeStat(st), s.nodeErr("setData", abs, err)
}

// SetACL sets the ACL of the node at path (relative to the Session's
// namespace) and returns its new Stat. With WithVersion(v) it sets it only
// while the node's ACL version (Aversion) is v. It is retried and fails as
// Set does; an empty ACL fails with ErrInvalidArgument, and an ACL the
// server will not set with ErrInvalidACL.
func (s *Session) SetACL(ctx context.Context, path string, acl []ACL, opts ...NodeOption) (*NodeStat, error) {
	c, err := s.checkNodeCall(ctx, path, "SetACL", opts, "WithVersion")
	if err != nil {
		return nil, err
	}
	if len(acl) == 0 {
		return nil, invalidArg("empty ACL")
	}
	abs, zacl := s.abs(path), toZKACL(acl)
	st, err := writeRetry(ctx, s, "setACL", abs, func() (*zk.Stat, error) {
		return call(ctx, s, "setACL", abs, func() (*zk.Stat, error) { return s.sendSetACL(abs, zacl, c.version) }, nil)
	}, c.version, func(st *zk.Stat) int32 { return st.Aversion })
	return newNodeStat(st), s.nodeErr("setACL", abs, err)
}

// writeRetry sends a write (send, request op) until it has a reply, waiting out lost
// connections under the Session's retry policy. An unversioned write
// (version -1) is sent again as it is; a versioned one only once a read of
// path shows the same node still at version (of, read from its Stat).
func writeRetry(ctx context.Context, s *Session, op, path string, send func() (*zk.Stat, error), version int32, of func(*zk.Stat) int32) (*zk.Stat, error) {
	bo := s.cfg.retry()
	for {
		if err := s.readyToSend(ctx); err != nil {
			return nil, err
		}
		before := s.lastZxid()
		st, err := send()
		if err == nil || err == ErrClosed || !replyLost(ctx, err) { // ErrClosed: before it was sent
			return st, err
		}
		unknown := outcomeUnknown(op, s.rel(path), err)
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return nil, unknown
		}
		if version != -1 {
			cur, rerr := s.settleStat(ctx, path)
			if rerr != nil || !unchangedSince(cur, before) || of(cur) != version {
				return nil, unknown // applied, or another write came first: nobody can tell
			}
		}
		if err := backOff(ctx, bo, "", unknown); err != nil {
			if ctx.Err() != nil {
				return nil, unknown
			}
			return nil, err
		}
	}
}

// readyToSend waits until the Session is connected, and returns ctx's
// error if it has ended: a write is sent only then, so that a failure
// after it can be told from one before.
func (s *Session) readyToSend(ctx context.Context) error {
	if _, _, err := s.awaitConnected(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// settleStat reads path's Stat after a sync, so that the read follows
// every write this Session sent before, waiting out lost connections under
// the Session's retry policy: what a write whose reply was lost is
// settled by. A node that does not exist is zk.ErrNoNode.
func (s *Session) settleStat(ctx context.Context, path string) (st *zk.Stat, err error) {
	err = s.retryConnLoss(ctx, "read "+s.rel(path), func() error {
		if err := s.sync(ctx, path); err != nil {
			return err
		}
		st, err = s.exists(ctx, path)
		return err
	})
	return st, err
}

// lastZxid is the zxid of the last reply the Session read, 0 when unknown
// (no wire layer).
func (s *Session) lastZxid() int64 {
	if s.wire == nil {
		return 0
	}
	return s.wire.LastZxid()
}

// unchangedSince tells whether st is of a node created no later than zxid
// before (not 0): the node a write sent after before was meant for, not
// one created again since.
func unchangedSince(st *zk.Stat, before int64) bool {
	return before > 0 && st.Czxid <= before
}

// Delete deletes the node at path (relative to the Session's namespace).
// Options: WithVersion (delete only while the node's data version is v,
// else ErrBadVersion), WithDeleteChildren (its descendants first),
// WithGuaranteed.
//
// A lost connection is waited out and the delete sent again under the
// Session's retry policy; a delete that finds the node gone after its
// first try returns nil (the node is gone, whoever deleted it); with
// WithVersion, it is sent again only while the node it was meant for is
// still there at that version, and it returns an error matching
// ErrOutcomeUnknown when no read can tell. It fails
// with ErrNoNode when the node did not exist, ErrNotEmpty, ErrBadVersion,
// ErrNotAuthorized, ErrInvalidPath, ErrInvalidArgument, ErrNilSession,
// ErrClosed, ErrRetriesExhausted, or ctx's error. With WithGuaranteed,
// when it cannot confirm the delete (a lost connection it could not wait
// out, ctx's end, the policy giving up, Close), it returns an error
// matching ErrDeleteDeferred and the cause, and deletes in the background
// until done; Session.Close reports a delete still pending with
// ErrDeletePending.
func (s *Session) Delete(ctx context.Context, path string, opts ...NodeOption) error {
	c, err := s.checkNodeCall(ctx, path, "Delete", opts, "WithVersion", "WithGuaranteed", "WithDeleteChildren")
	if err != nil {
		return err
	}
	abs := s.abs(path)
	err = s.deleteTree(ctx, abs, c.version, c.children, s.cfg.retry(), nil)
	if err == nil || !c.guaranteed || !deferrable(err) {
		return s.nodeErr("delete", abs, err)
	}
	if !s.deleteInBackground(abs, c.version, c.children) {
		return s.nodeErr("delete", abs, err) // closed meanwhile: it matches ErrClosed
	}
	return fmt.Errorf("%w: %s: %w", ErrDeleteDeferred, path, err)
}

// deferrable tells whether a delete that failed with err may succeed in
// the background.
func deferrable(err error) bool {
	return lostConnection(err) || errors.Is(err, ErrRetriesExhausted) || errors.Is(err, ErrClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// deleteTree deletes path (with its descendants when children), waiting
// out lost connections under bo. NoNode after the first try is success.
// When ctx ends while the delete of path is on its way, late (if not nil)
// is called if it succeeds after all.
func (s *Session) deleteTree(ctx context.Context, path string, version int32, children bool, bo BackOff, late func()) error {
	tried := false
	for {
		if _, _, err := s.awaitConnected(ctx); err != nil {
			return err
		}
		before := s.lastZxid()
		err := s.deleteVersionLate(ctx, path, version, late)
		switch {
		case err == nil, err == zk.ErrNoNode && tried:
			return nil
		case err == zk.ErrNotEmpty && children:
			if err = s.deleteChildren(ctx, path); err == nil {
				continue
			}
		}
		tried = true
		if !lostConnection(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if version != -1 {
			// Sent again only to the same node, still at version: a node
			// made again on the path since may be at version too.
			st, serr := s.settleStat(ctx, path)
			switch {
			case serr == zk.ErrNoNode:
				return nil // gone, by this delete or another
			case serr == nil && unchangedSince(st, before) && st.Version != version:
				return zk.ErrBadVersion // not applied: the node moved past version
			case serr != nil || !unchangedSince(st, before):
				return outcomeUnknown("delete", s.rel(path), err)
			}
		}
		if err := backOff(ctx, bo, "delete "+s.rel(path), err); err != nil {
			return err
		}
	}
}

// deleteChildren deletes every descendant of path, deepest first.
func (s *Session) deleteChildren(ctx context.Context, path string) error {
	kids, err := s.children(ctx, path)
	if err != nil {
		if err == zk.ErrNoNode {
			return nil
		}
		return err
	}
	for _, k := range kids {
		p := joinPath(path, k)
		if err := s.deleteChildren(ctx, p); err != nil {
			return err
		}
		if err := s.deleteVersion(ctx, p, -1); err != nil && err != zk.ErrNoNode {
			if err == zk.ErrNotEmpty { // a child came meanwhile
				return s.deleteChildren(ctx, path)
			}
			return err
		}
	}
	return nil
}

// deleteInBackground goes on deleting path in the background (a
// guaranteed Delete), until it is gone or cannot be (a version that no
// longer matches, a refusal), or the Session closes: Close then reports
// it. It reports false when the Session is closed already.
func (s *Session) deleteInBackground(path string, version int32, children bool) bool {
	key := &struct{ path string }{path}
	s.pendingDeletes.Store(key, path)
	ok := s.goBackground(0, func(ctx context.Context) {
		// Forever, once a second at most apart: the node must go.
		err := s.deleteTree(ctx, path, version, children, &untilStopped{s.cfg.retry()}, func() {
			s.pendingDeletes.Delete(key) // the reply came after Close ended ctx: done all the same
		})
		switch {
		case err == nil || err == zk.ErrNoNode: // gone (NoNode: the foreground's delete got through after all)
		case ctx.Err() != nil || s.isClosed():
			return // pending: Close reports it
		default:
			s.cfg.log.Error("zkrecipes: guaranteed delete cannot complete; the node stays", "path", s.rel(path), "err", err)
		}
		s.pendingDeletes.Delete(key)
	})
	if !ok {
		s.pendingDeletes.Delete(key)
	}
	return ok
}

// untilStopped is a BackOff that goes on once a second after its policy
// gives up.
type untilStopped struct{ BackOff }

func (u *untilStopped) NextBackOff() time.Duration {
	if d := u.BackOff.NextBackOff(); d != Stop {
		return d
	}
	return time.Second
}

// PendingDeletes returns the paths (relative to the namespace, sorted)
// of the guaranteed deletes (Delete WithGuaranteed) still going on in the
// background: a delete leaves the list once its reply confirmed it, or
// once it cannot complete (logged). Close reports those still listed
// (ErrDeletePending); a caller who wants none reported waits for the list
// to empty before it closes.
func (s *Session) PendingDeletes() []string {
	var paths []string
	s.pendingDeletes.Range(func(_, v any) bool {
		paths = append(paths, s.rel(v.(string)))
		return true
	})
	slices.Sort(paths)
	return paths
}

// pendingDeletesErr is what Close returns for the guaranteed deletes
// still pending: nil when there are none.
func (s *Session) pendingDeletesErr() error {
	paths := s.PendingDeletes()
	if len(paths) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrDeletePending, strings.Join(paths, ", "))
}

// checkNodeCall checks what every node operation checks before any
// request: the Session, ctx, the path and the options (op takes those
// named in takes).
func (s *Session) checkNodeCall(ctx context.Context, path, op string, opts []NodeOption, takes ...string) (nodeConfig, error) {
	if s == nil {
		return nodeConfig{}, ErrNilSession
	}
	if ctx == nil {
		return nodeConfig{}, invalidArg("nil context")
	}
	if err := validatePath(path); err != nil {
		return nodeConfig{}, err
	}
	if err := s.checkPathLength(path); err != nil {
		return nodeConfig{}, err
	}
	return buildNodeConfig(op, opts, takes...)
}

// nodeErr types ZooKeeper's node errors of request op on path (absolute)
// as this package's (ErrNoNode...), naming the path under the namespace;
// other errors pass through as opError leaves them.
func (s *Session) nodeErr(op, path string, err error) error {
	var kind error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		kind = ErrNoNode
	case errors.Is(err, zk.ErrNodeExists):
		kind = ErrNodeExists
	case errors.Is(err, zk.ErrBadVersion):
		kind = ErrBadVersion
	case errors.Is(err, zk.ErrNotEmpty):
		kind = ErrNotEmpty
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		kind = ErrNoChildrenForEphemerals
	default:
		return s.opError(op, path, err)
	}
	var done *replyError
	if errors.As(err, &done) && !done.refused {
		return err
	}
	return &replyError{op: op, path: s.rel(path), kind: kind, cause: err}
}
