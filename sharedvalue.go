package zkrecipes

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// SharedValue is a value shared by every client through the data of one
// ZooKeeper node, wire-compatible with Curator's SharedValue: a Curator
// process and a Go process on the same path see each other's writes.
//
// Every read returns the value with its version (the node's data
// version), and TrySet writes only if the value has not changed since the
// version it is given. A node that does not exist is created with the
// seed value (its missing ancestors as containers), as Curator does, by
// the first call that needs it.
//
// When the connection is lost or the Session is closed before a write's
// reply, or ctx ends after the write was sent, Set and TrySet return an
// error matching ErrOutcomeUnknown and its cause (zk.ErrConnectionClosed,
// ErrClosed, ctx's error):
// the write may or may not have happened. It is never undone, since other
// clients may have built on it. (A seed's create whose caller gave up is
// not undone either.)
//
// NewSharedValue does no I/O. A SharedValue is safe for concurrent use.
type SharedValue struct {
	s    *Session
	path string // as given
	abs  string // absolute, namespace included
	seed []byte // as stored: compressed when compress is on
	err  error

	compress bool // WithValueCompression, else the Session's WithCompression
}

// VersionedValue is a shared value as read: its data and the version a
// TrySet compares against.
type VersionedValue struct {
	Value   []byte
	Version int32
}

// NewSharedValue returns a shared value at path (relative to the Session's
// namespace) that is created with seed (nil: 0 bytes) when it does not
// exist. It does no
// I/O; an invalid path, a nil session or a seed too large for the
// Session's request size limit is reported by every method. Options:
// WithValueCompression.
func NewSharedValue(s *Session, path string, seed []byte, opts ...SharedValueOption) *SharedValue {
	v := &SharedValue{s: s, path: path}
	v.err = checkRecipe(s, path)
	var cfg sharedValueConfig
	for _, o := range opts {
		if o == nil {
			v.err = firstErr(v.err, invalidArg("nil SharedValueOption"))
			continue
		}
		o(&cfg)
	}
	v.compress = compressionFor(s, cfg.compress)
	v.seed = append([]byte(nil), encodeData(v.compress, seed)...)
	if v.err == nil {
		v.abs = s.abs(path)
		v.err = s.checkNodeData(path, v.seed, v.abs)
	}
	return v
}

// SharedValueOption configures NewSharedValue.
type SharedValueOption func(*sharedValueConfig)

type sharedValueConfig struct {
	compress *bool // nil: the Session's
}

// WithValueCompression makes the SharedValue store its value
// gzip-compressed, and read it decompressed, in the format of Curator's
// GzipCompressionProvider (a Curator SharedValue cannot: read it with
// getData().decompressed()). A value read that is not gzip fails with
// ErrNotCompressed; the size limit (ErrDataTooLarge) applies to the
// compressed value. Default: the Session's WithCompression (off unless
// set).
func WithValueCompression(on bool) SharedValueOption {
	return func(c *sharedValueConfig) { c.compress = &on }
}

// Path returns the value's path, as given to NewSharedValue.
func (v *SharedValue) Path() string { return v.path }

// Get returns the current value and its version, creating the node with
// the seed value first if it does not exist. It fails with ctx's error,
// ErrClosed or a ZooKeeper error; a lost connection is waited out.
// The value read is the one the Session's server holds: it reflects every
// write this Session made, but may lag a write another client has already
// seen acknowledged (ZooKeeper's reads are sequentially consistent, not
// linearizable); a versioned write (TrySet) fails rather than act on a
// lagging read.
func (v *SharedValue) Get(ctx context.Context) (VersionedValue, error) {
	if v.err != nil {
		return VersionedValue{}, v.err
	}
	r, _, err := v.read(ctx)
	return r, err
}

// Set writes value (nil: 0 bytes) whatever the current one is and returns
// it with its new version. If the connection is lost before the reply, the write may
// or may not have happened: Set returns an error matching
// ErrOutcomeUnknown and zk.ErrConnectionClosed rather than write again.
func (v *SharedValue) Set(ctx context.Context, value []byte) (VersionedValue, error) {
	return v.set(ctx, value, -1)
}

// TrySet writes value (nil: 0 bytes) only if the node's version is still
// expectedVersion (the Version of a VersionedValue read before), like
// Curator's trySetValue. When the value has changed since, it writes
// nothing and returns an error matching ErrVersionChanged: read again and
// retry. On success it returns the value with its new version.
//
// A node's version wraps negative after 2^31-1 writes, and any version
// read is accepted, a negative one too, and judged by the server (Curator
// fixed the same refusal as CURATOR-688). Only -1, which ZooKeeper takes
// as "any version", is refused with ErrInvalidArgument: use Set to write
// whatever the version (a node whose version has wrapped to exactly -1
// cannot be set conditionally, by any ZooKeeper client).
func (v *SharedValue) TrySet(ctx context.Context, value []byte, expectedVersion int32) (VersionedValue, error) {
	if expectedVersion == -1 {
		return VersionedValue{}, invalidArg("expected version -1 means any version to ZooKeeper: use the Version of a value read before, or Set")
	}
	return v.set(ctx, value, expectedVersion)
}

// Watch calls fn with the current value (creating the node with the seed
// value first if it does not exist), then again after every change, until
// ctx ends; it then returns ctx's error (or ErrClosed, or the error that
// made reading impossible). fn runs on the caller's goroutine, one call at
// a time; changes made while fn runs, or while the connection is down, are
// coalesced: fn may not see every intermediate value, but it always sees
// the last one, with a version never older than the one before. After a
// reconnection or a session expiry the value is read again, and fn is
// called if it changed meanwhile.
//
// Watch follows one node. When it is deleted, Watch returns an error
// matching ErrValueDeleted, without calling fn and without creating the
// node again; likewise when it finds the node deleted and created anew
// (whose versions start again at 0). Curator's SharedValue also stops
// following a deleted node, silently. Call Watch again to follow the value
// from its new node on.
func (v *SharedValue) Watch(ctx context.Context, fn func(VersionedValue)) error {
	if v.err != nil {
		return v.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	if fn == nil {
		return invalidArg("nil watch function")
	}
	var czxid int64 // the node followed, once read
	return follow(ctx, v.s, func(ctx context.Context) (nodeData, <-chan zk.Event, error) {
		st, data, w, err := v.readW(ctx, czxid)
		if err == nil {
			czxid = st.Czxid
		}
		return nodeData{data: data, stat: st}, w, err
	}, newerData, nil, func(n nodeData) error {
		fn(VersionedValue{Value: n.data, Version: n.stat.Version})
		return nil
	})
}

// readW reads the value and sets a data watch on it. With czxid 0 it
// creates a missing node with the seed first; otherwise it fails with
// ErrValueDeleted when the node is gone or is no longer the one created
// at czxid.
func (v *SharedValue) readW(ctx context.Context, czxid int64) (*zk.Stat, []byte, <-chan zk.Event, error) {
	for {
		data, st, w, err := v.s.getW(ctx, v.abs)
		switch {
		case err == nil && (czxid == 0 || st.Czxid == czxid):
			if data, err = decodeData(v.compress, v.path, data); err != nil {
				return nil, nil, nil, err
			}
			return st, data, w, nil
		case err == nil || err == zk.ErrNoNode && czxid != 0:
			return nil, nil, nil, fmt.Errorf("%w: %s", ErrValueDeleted, v.path)
		}
		if err = v.retry(ctx, err); err != nil {
			return nil, nil, nil, err
		}
	}
}

// read reads the value.
func (v *SharedValue) read(ctx context.Context) (VersionedValue, *zk.Stat, error) {
	for {
		data, st, err := v.s.get(ctx, v.abs)
		if err == nil {
			if data, err = decodeData(v.compress, v.path, data); err != nil {
				return VersionedValue{}, nil, err
			}
			return VersionedValue{Value: data, Version: st.Version}, st, nil
		}
		if err = v.retry(ctx, err); err != nil {
			return VersionedValue{}, nil, err
		}
	}
}

// retry handles a failed read: it creates a missing node with the seed,
// waits out a lost connection, and returns any other error.
func (v *SharedValue) retry(ctx context.Context, err error) error {
	switch {
	case err == zk.ErrNoNode:
		return v.s.createSeeded(ctx, v.abs, v.seed)
	case isRetryable(err) || errors.Is(err, zk.ErrSessionExpired):
		_, _, werr := v.s.awaitConnected(ctx)
		return werr
	}
	return v.s.opError("getData", v.abs, err)
}

// set writes value at version (-1: any), creating the node when missing.
func (v *SharedValue) set(ctx context.Context, value []byte, version int32) (VersionedValue, error) {
	if v.err != nil {
		return VersionedValue{}, v.err
	}
	if ctx == nil {
		return VersionedValue{}, invalidArg("nil context")
	}
	stored := encodeData(v.compress, value)
	if err := v.s.checkNodeData(v.path, stored, v.abs); err != nil {
		return VersionedValue{}, err
	}
	for {
		st, err := v.s.setVersioned(ctx, v.abs, stored, version)
		switch {
		case err == nil:
			return VersionedValue{Value: append([]byte(nil), value...), Version: st.Version}, nil
		case err == zk.ErrBadVersion:
			return VersionedValue{}, fmt.Errorf("%w: %s is no longer at version %d", ErrVersionChanged, v.path, version)
		case err == zk.ErrNoNode:
			if err := v.s.createSeeded(ctx, v.abs, v.seed); err != nil {
				return VersionedValue{}, err
			}
		case replyLost(ctx, err):
			return VersionedValue{}, fmt.Errorf("%w: %s: no reply to the write: %w", ErrOutcomeUnknown, v.path, err)
		default:
			return VersionedValue{}, v.s.opError("setData", v.abs, err)
		}
	}
}

// setVersioned sets path's data if its version is version (-1: any).
func (s *Session) setVersioned(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	return call(ctx, s, "setData", path, func() (*zk.Stat, error) {
		return s.sendSet(path, data, version)
	}, nil)
}

// createSeeded creates the PERSISTENT node path with data unless it
// exists, creating its missing ancestors as containers, as Curator's
// shared values do. A lost connection is waited out.
func (s *Session) createSeeded(ctx context.Context, path string, data []byte) error {
	for {
		err := s.createShared(ctx, path, data, true)
		switch {
		case err == nil || err == zk.ErrNodeExists:
			return nil
		case isRetryable(err):
			if _, _, err := s.awaitConnected(ctx); err != nil {
				return err
			}
		default:
			return s.opError("create", path, err)
		}
	}
}
