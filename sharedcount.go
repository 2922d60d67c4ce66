package zkrecipes

import (
	"context"
	"encoding/binary"
	"fmt"
)

// SharedCount is a 32-bit integer shared by every client through the data
// of one ZooKeeper node, wire-compatible with Curator's SharedCount (a
// 4-byte big-endian int): a Curator SharedCount, a Semaphore made with
// WithSharedCount and a SharedCount on the same path share one count.
//
// It is a SharedValue that holds a count: reads return the count with its
// version, TrySet writes only over the version it is given, and Watch
// follows the changes. A node that does not hold exactly 4 bytes is not a
// SharedCount: every read of it fails with ErrBadCount.
//
// NewSharedCount does no I/O. A SharedCount is safe for concurrent use.
type SharedCount struct {
	v *SharedValue
}

// VersionedCount is a shared count as read: the count and the version a
// TrySet compares against.
type VersionedCount struct {
	Count   int32
	Version int32
}

// NewSharedCount returns a shared count at path (relative to the Session's
// namespace) that is created holding seed when it does not exist. It does
// no I/O; an invalid path or a nil session is reported by every method.
func NewSharedCount(s *Session, path string, seed int32) *SharedCount {
	return &SharedCount{v: NewSharedValue(s, path, encodeCount(seed), WithValueCompression(false))}
}

// Path returns the count's path, as given to NewSharedCount.
func (c *SharedCount) Path() string { return c.v.path }

// Get returns the current count and its version, creating the node with
// the seed first if it does not exist. It fails with ErrBadCount when the
// node does not hold a count, ctx's error, ErrClosed or a ZooKeeper error.
// The value read is the one the Session's server holds: it reflects every
// write this Session made, but may lag a write another client has already
// seen acknowledged (ZooKeeper's reads are sequentially consistent, not
// linearizable); a versioned write (TrySet) fails rather than act on a
// lagging read.
func (c *SharedCount) Get(ctx context.Context) (VersionedCount, error) {
	r, err := c.v.Get(ctx)
	if err != nil {
		return VersionedCount{}, err
	}
	return c.decode(r)
}

// Set writes n whatever the current count is, and returns it with its new
// version. See SharedValue.Set.
func (c *SharedCount) Set(ctx context.Context, n int32) (VersionedCount, error) {
	r, err := c.v.Set(ctx, encodeCount(n))
	if err != nil {
		return VersionedCount{}, err
	}
	return VersionedCount{Count: n, Version: r.Version}, nil
}

// TrySet writes n only if the count is still at expectedVersion (the
// Version of a VersionedCount read before), like Curator's trySetCount;
// otherwise it writes nothing and returns an error matching
// ErrVersionChanged. See SharedValue.TrySet.
func (c *SharedCount) TrySet(ctx context.Context, n int32, expectedVersion int32) (VersionedCount, error) {
	r, err := c.v.TrySet(ctx, encodeCount(n), expectedVersion)
	if err != nil {
		return VersionedCount{}, err
	}
	return VersionedCount{Count: n, Version: r.Version}, nil
}

// Watch calls fn with the current count, then again after every change,
// until ctx ends, as SharedValue.Watch does: changes may be coalesced, the
// last one is never missed, a version is never older than the one before.
// It returns ctx's error, ErrClosed, ErrValueDeleted when the count's node
// is deleted (Watch does not create it again; call Watch again to follow
// the count anew), or the error that made reading impossible: ErrBadCount
// when the node does not hold a count.
func (c *SharedCount) Watch(ctx context.Context, fn func(VersionedCount)) error {
	if c.v.err != nil {
		return c.v.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	if fn == nil {
		return invalidArg("nil watch function")
	}
	var bad error
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := c.v.Watch(wctx, func(r VersionedValue) {
		n, err := c.decode(r)
		if err != nil {
			bad = err
			cancel()
			return
		}
		fn(n)
	})
	if bad != nil {
		return bad
	}
	return err
}

func (c *SharedCount) decode(r VersionedValue) (VersionedCount, error) {
	n, err := decodeCount(c.v.path, r.Value)
	return VersionedCount{Count: n, Version: r.Version}, err
}

// encodeCount is Curator's SharedCount format: a 4-byte big-endian int.
func encodeCount(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// decodeCount reads a count in Curator's SharedCount format from the data
// of the node at path (as the user gave it).
func decodeCount(path string, data []byte) (int32, error) {
	if len(data) != 4 {
		return 0, fmt.Errorf("%w: %s holds %d bytes; it is not a SharedCount (use another path, or delete the node)", ErrBadCount, path, len(data))
	}
	return int32(binary.BigEndian.Uint32(data)), nil
}
