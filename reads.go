package zkrecipes

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// GetData reads the data and Stat of the node at path (relative to the
// Session's namespace) once, and leaves no watch on the server: it is Get
// without the retry, for a caller that handles a lost connection itself
// (service discovery). The request is checked, traced and typed like the
// recipes' own.
//
// A path that is not a valid recipe path, or too long for any request to
// name it under the Session's request size limit (WithMaxRequestSize),
// fails at once with an error matching ErrInvalidPath, and nothing is
// sent: a server closes the connection on such a request. It returns
// ZooKeeper's zk.ErrNoNode when the node does not exist,
// ErrNotAuthorized when the node's ACL refuses the Session, ErrNilSession
// or ErrInvalidArgument (a nil ctx) before any request, ErrClosed after
// Close, ctx's error as soon as ctx ends (the request, which cannot be
// cancelled, completes in the background), and the connection's errors
// otherwise (it is not retried). The Stat is nil on every error.
func (s *Session) GetData(ctx context.Context, path string) ([]byte, *NodeStat, error) {
	if s == nil {
		return nil, nil, ErrNilSession
	}
	if err := validateReadPath(path); err != nil {
		return nil, nil, err
	}
	data, st, err := s.get(ctx, s.readAbs(path))
	return data, newNodeStat(st), err
}

// GetChildren lists the names of the children of the node at path
// (relative to the Session's namespace; "/" lists the namespace's root),
// in no particular order, with the node's Stat, once, and leaves no watch
// on the server: it is Children without the retry. It fails as GetData.
func (s *Session) GetChildren(ctx context.Context, path string) ([]string, *NodeStat, error) {
	if s == nil {
		return nil, nil, ErrNilSession
	}
	if err := validateReadPath(path); err != nil {
		return nil, nil, err
	}
	kids, st, err := s.childrenStat(ctx, s.readAbs(path))
	return kids, newNodeStat(st), err
}

// validateReadPath is validatePath, which also lets a read name the root
// and ConfigPath.
func validateReadPath(path string) error {
	if path == "/" || path == ConfigPath {
		return nil
	}
	return validatePath(path)
}

// readAbs is abs for a read, which may name the namespace's root.
func (s *Session) readAbs(path string) string {
	if path == "/" && s.cfg.namespace != "" {
		return s.cfg.namespace
	}
	return s.abs(path)
}

// The reads of the node API. Each is sent again after a lost connection
// (a read changes nothing), once the Session is connected again, under the
// Session's retry policy, until ctx ends.

// readRetry runs read until it has a reply, waiting out lost connections
// under the Session's retry policy.
func readRetry[T any](ctx context.Context, s *Session, path string, read func() (T, error)) (T, error) {
	bo := s.cfg.retry()
	for {
		var v T
		_, _, err := s.awaitConnected(ctx)
		if err == nil {
			if v, err = read(); err == nil || !lostConnection(err) {
				return v, err
			}
		}
		if !lostConnection(err) {
			return v, err
		}
		d := bo.NextBackOff()
		if d == Stop {
			return v, fmt.Errorf("%w: %s: %w", ErrRetriesExhausted, s.rel(path), err)
		}
		if err := sleepCtx(ctx, d); err != nil {
			return v, err
		}
	}
}

// checkRead checks a read's Session, ctx and path (which may be "/", the
// namespace's root) and returns the path, absolute.
func (s *Session) checkRead(ctx context.Context, path string) (string, error) {
	if s == nil {
		return "", ErrNilSession
	}
	if ctx == nil {
		return "", invalidArg("nil context")
	}
	if err := validateReadPath(path); err != nil {
		return "", err
	}
	abs := s.readAbs(path)
	return abs, s.checkRequestPath(abs)
}

// Get reads the data and Stat of the node at path (relative to the
// Session's namespace; "/" is the namespace's root) and leaves no watch on
// the server. A lost connection is waited out and the read sent again
// under the Session's retry policy. It fails with ErrNoNode,
// ErrNotAuthorized, ErrInvalidPath, ErrInvalidArgument (a nil ctx),
// ErrNilSession, ErrClosed, ErrRetriesExhausted, or ctx's error. The data
// is the caller's to keep.
func (s *Session) Get(ctx context.Context, path string) ([]byte, *NodeStat, error) {
	abs, err := s.checkRead(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	r, err := readRetry(ctx, s, abs, func() (getResult, error) {
		d, st, err := s.get(ctx, abs)
		return getResult{data: d, stat: st}, err
	})
	if err != nil {
		return nil, nil, s.nodeErr("getData", abs, err)
	}
	return r.data, newNodeStat(r.stat), nil
}

// Exists returns the Stat of the node at path (relative to the Session's
// namespace), or nil and no error when there is no node there. It sets no
// watch, is retried as Get, and fails as Get does (but for ErrNoNode).
func (s *Session) Exists(ctx context.Context, path string) (*NodeStat, error) {
	abs, err := s.checkRead(ctx, path)
	if err != nil {
		return nil, err
	}
	st, err := readRetry(ctx, s, abs, func() (*zk.Stat, error) { return s.exists(ctx, abs) })
	switch {
	case err == zk.ErrNoNode:
		return nil, nil
	case err != nil:
		return nil, s.nodeErr("exists", abs, err)
	}
	return newNodeStat(st), nil
}

// Children lists the names of the children of the node at path (relative
// to the Session's namespace; "/" lists the namespace's root), in no
// particular order, with the node's Stat, and leaves no watch. It is
// retried and fails as Get.
func (s *Session) Children(ctx context.Context, path string) ([]string, *NodeStat, error) {
	abs, err := s.checkRead(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	r, err := readRetry(ctx, s, abs, func() (childrenResult, error) {
		kids, st, err := s.childrenStat(ctx, abs)
		return childrenResult{kids: kids, stat: st}, err
	})
	if err != nil {
		return nil, nil, s.nodeErr("getChildren", abs, err)
	}
	return r.kids, newNodeStat(r.stat), nil
}

// GetACL reads the ACL of the node at path (relative to the Session's
// namespace) and its Stat (whose Aversion SetACL's WithVersion compares).
// It is retried and fails as Get.
func (s *Session) GetACL(ctx context.Context, path string) ([]ACL, *NodeStat, error) {
	abs, err := s.checkRead(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	type res struct {
		acl []zk.ACL
		st  *zk.Stat
	}
	r, err := readRetry(ctx, s, abs, func() (res, error) {
		acl, st, err := s.getACL(ctx, abs)
		return res{acl, st}, err
	})
	if err != nil {
		return nil, nil, s.nodeErr("getACL", abs, err)
	}
	return fromZKACL(r.acl), newNodeStat(r.st), nil
}

// Sync makes the server the Session is connected to catch up with the
// ensemble's leader on path (relative to the Session's namespace) before
// the Session's next read: a read after Sync sees every write the
// ensemble had applied when Sync was sent. It is retried and fails as Get
// (a missing node is no error).
func (s *Session) Sync(ctx context.Context, path string) error {
	abs, err := s.checkRead(ctx, path)
	if err != nil {
		return err
	}
	_, err = readRetry(ctx, s, abs, func() (struct{}, error) { return struct{}{}, s.sync(ctx, abs) })
	return s.nodeErr("sync", abs, err)
}

// Ephemerals lists the ephemeral nodes of the Session's current ZooKeeper
// session whose path (relative to the namespace) starts with prefix, a
// string prefix, not a subtree: "/app/a" lists "/app/a" and "/app/ab/x";
// "/" lists them all. Only nodes under the namespace are listed, in no
// particular order. It is ZooKeeper 3.6's getEphemerals, which the wire
// layer sends: it fails with ErrNeedsWireLayer on a Session made by
// NewSession or WithWireLayer(false), with ErrServerTooOld on a server
// before 3.6 (which also closes the connection), and otherwise is
// retried and fails as Get.
func (s *Session) Ephemerals(ctx context.Context, prefix string) ([]string, error) {
	if s == nil {
		return nil, ErrNilSession
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	if prefix == "" || prefix[0] != '/' {
		return nil, &PathError{Path: prefix, Reason: "must be absolute (start with /)"}
	}
	abs := s.cfg.namespace + prefix
	if prefix == "/" && s.cfg.namespace != "" {
		abs = s.cfg.namespace + "/"
	}
	if err := s.checkRequestPath(abs); err != nil {
		return nil, err
	}
	body, err := readRetry(ctx, s, abs, func() ([]byte, error) {
		return s.ownRead(ctx, "getEphemerals", abs, wire.OpGetEphemerals, wire.PathBody(abs))
	})
	if err != nil {
		return nil, s.nodeErr("getEphemerals", abs, err)
	}
	paths, err := wire.DecodeStrings(body)
	if err != nil {
		return nil, fmt.Errorf("zkrecipes: getEphemerals %s: %w", prefix, err)
	}
	out := paths[:0]
	for _, p := range paths {
		if ns := s.cfg.namespace; ns == "" || strings.HasPrefix(p, ns+"/") {
			out = append(out, s.rel(p))
		}
	}
	return out, nil
}

// CountDescendants returns the number of nodes under the node at path
// (relative to the Session's namespace; "/" is the namespace's root), at
// any depth, the node itself not counted. It is ZooKeeper 3.6's
// getAllChildrenNumber, which the wire layer sends; it fails as
// Ephemerals, and with ErrNoNode when there is no node at path.
func (s *Session) CountDescendants(ctx context.Context, path string) (int, error) {
	abs, err := s.checkRead(ctx, path)
	if err != nil {
		return 0, err
	}
	body, err := readRetry(ctx, s, abs, func() ([]byte, error) {
		return s.ownRead(ctx, "getAllChildrenNumber", abs, wire.OpGetAllChildrenNumber, wire.PathBody(abs))
	})
	if err != nil {
		return 0, s.nodeErr("getAllChildrenNumber", abs, err)
	}
	n, err := wire.DecodeInt(body)
	if err != nil {
		return 0, fmt.Errorf("zkrecipes: getAllChildrenNumber %s: %w", path, err)
	}
	return int(n), nil
}

// Identity is one identity a ZooKeeper session is authenticated as.
type Identity struct {
	Scheme string // "ip", "digest", "sasl", "x509", ...
	ID     string // the user (for "ip", the client's address)
}

// WhoAmI returns the identities the server holds for the Session's
// current ZooKeeper session: the client's address ("ip"), and each
// identity it authenticated as (WithDigestAuth, WithSASL, a WithTLS
// client certificate). It is ZooKeeper 3.7's whoAmI, which the wire layer
// sends; it fails as Ephemerals (ErrServerTooOld before 3.7).
func (s *Session) WhoAmI(ctx context.Context) ([]Identity, error) {
	if s == nil {
		return nil, ErrNilSession
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	body, err := readRetry(ctx, s, "", func() ([]byte, error) {
		return s.ownRead(ctx, "whoAmI", "", wire.OpWhoAmI, nil)
	})
	if err != nil {
		return nil, s.opError("whoAmI", "", err)
	}
	infos, err := wire.DecodeClientInfos(body)
	if err != nil {
		return nil, fmt.Errorf("zkrecipes: whoAmI: %w", err)
	}
	ids := make([]Identity, len(infos))
	for i, c := range infos {
		ids[i] = Identity{Scheme: c.Scheme, ID: c.User}
	}
	return ids, nil
}
