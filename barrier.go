package zkrecipes

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// Barrier is a distributed barrier on a ZooKeeper path, wire-compatible
// with Curator's DistributedBarrier: the barrier is set while the node at
// the path exists. Set creates it, Remove deletes it, and Wait blocks until
// it is gone. A Curator process and a Go process using the same path see
// one barrier.
//
// The node is persistent: a barrier stays set after the Session that set it
// closes, until some process removes it.
//
// NewBarrier does no I/O. A Barrier is safe for concurrent use.
type Barrier struct {
	s    *Session
	path string
	abs  string
	data []byte
	err  error
}

// BarrierOption configures a Barrier.
type BarrierOption func(*barrierConfig)

type barrierConfig struct {
	data   []byte
	custom bool
}

// WithBarrierData sets the data Set stores in the barrier's node (nil: 0
// bytes). Default: this host's address as text, as Curator writes.
func WithBarrierData(data []byte) BarrierOption {
	return func(c *barrierConfig) {
		c.data = append([]byte(nil), data...)
		c.custom = true
	}
}

// NewBarrier returns a barrier on path (relative to the Session's
// namespace). It does no I/O; an invalid path, a nil session, a nil option
// or data too large (ErrDataTooLarge) is reported by every method.
func NewBarrier(s *Session, path string, opts ...BarrierOption) *Barrier {
	b := &Barrier{s: s, path: path}
	var c barrierConfig
	for _, o := range opts {
		if o == nil {
			b.err = invalidArg("nil BarrierOption")
			return b
		}
		o(&c)
	}
	b.data = c.data
	if !c.custom {
		b.data = []byte(localAddress())
	}
	if b.err = checkRecipe(s, path); b.err == nil {
		b.abs = s.abs(path)
		b.err = s.checkNodeData(path, b.data, b.abs)
	}
	return b
}

// Path returns the barrier's path, as given to NewBarrier.
func (b *Barrier) Path() string { return b.path }

// Set sets the barrier: it creates the node (and any missing parent, as a
// container) unless it exists already. A lost connection is retried under
// the Session's retry policy. It fails with ctx's error, ErrClosed,
// ErrRetriesExhausted or a ZooKeeper error (for example an ACL that
// forbids the create).
func (b *Barrier) Set(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	return b.s.retryConnLoss(ctx, "set barrier", func() error {
		err := b.s.createShared(ctx, b.abs, b.data, true)
		if err == nil || err == zk.ErrNodeExists {
			return nil
		}
		return b.s.opError("create", b.abs, err)
	})
}

// Remove removes the barrier, releasing every waiter: it deletes the node
// if it exists. A lost connection is retried under the Session's retry
// policy. It fails with ctx's error, ErrClosed, ErrRetriesExhausted or a
// ZooKeeper error (zk.ErrNotEmpty if someone created nodes under the
// barrier's node: remove them first).
func (b *Barrier) Remove(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	return b.s.retryConnLoss(ctx, "remove barrier", func() error {
		err := b.s.delete(ctx, b.abs)
		if err == zk.ErrNoNode {
			return nil
		}
		return b.s.opError("delete", b.abs, err)
	})
}

// IsSet reports whether the barrier is set now.
func (b *Barrier) IsSet(ctx context.Context) (bool, error) {
	if err := b.check(ctx); err != nil {
		return false, err
	}
	_, err := b.s.exists(ctx, b.abs)
	switch err {
	case nil:
		return true, nil
	case zk.ErrNoNode:
		return false, nil
	}
	return false, b.s.opError("exists", b.abs, err)
}

// Wait blocks until the barrier is not set (at once if it is not set now)
// or ctx ends. It waits through lost connections and session expiry,
// looking again once connected, so a removal it missed while cut off still
// releases it. It fails with ctx's error, ErrClosed, or a ZooKeeper error
// that retrying cannot cure (for example an ACL that forbids reading the
// node).
func (b *Barrier) Wait(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	for {
		// A data watch, not an exists watch: it is set only on a node that
		// exists, and fires when the node goes, so none is left behind.
		_, _, w, err := b.s.getW(ctx, b.abs)
		switch {
		case err == zk.ErrNoNode:
			return nil
		case err != nil:
			if !b.s.awaitReconnect(ctx, err) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return b.s.opError("getData", b.abs, err)
			}
			continue
		}
		select {
		case <-w: // deleted, changed, or the session's watches ended: look again
		case <-b.s.closedCh: // an adopted connection's watch outlives Close
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *Barrier) check(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	if ctx == nil {
		return invalidArg("nil context")
	}
	return nil
}

// barrierRetryPause is how long a waiter pauses after a lost connection
// before asking the Session whether it is connected (it may not have seen
// the disconnect yet).
const barrierRetryPause = 50 * time.Millisecond

// awaitReconnect waits until a request that failed with err may be sent again:
// false when it must not (ctx ended, the Session closed, or err is not
// one that passes with a new connection or session).
func (s *Session) awaitReconnect(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, ErrClosed) || errors.Is(err, zk.ErrClosing) {
		return false
	}
	if !isRetryable(err) && !errors.Is(err, zk.ErrSessionExpired) {
		return false
	}
	if sleepCtx(ctx, barrierRetryPause) != nil {
		return false
	}
	_, _, werr := s.awaitConnected(ctx)
	return werr == nil
}

// retryConnLoss runs op until it succeeds or fails for a reason other than a
// lost connection, pacing attempts with the Session's retry policy; what
// names the operation in the error when the policy gives up.
func (s *Session) retryConnLoss(ctx context.Context, what string, op func() error) error {
	bo := s.cfg.retry()
	for {
		err := op()
		if err == nil || !isRetryable(err) {
			return err
		}
		if err := backOff(ctx, bo, what, err); err != nil {
			return err
		}
		if _, _, err := s.awaitConnected(ctx); err != nil {
			return err
		}
	}
}
