package zkrecipes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// AtomicCounter is a 64-bit integer on a ZooKeeper node that clients
// change atomically, wire-compatible with Curator's DistributedAtomicLong
// (an 8-byte big-endian long): Curator and Go processes may add to the
// same counter and no update is lost.
//
// Each change reads the node and writes it back only over the version it
// read; when another client wrote first it tries again, pacing its tries
// by a retry policy (WithOptimisticRetry). With WithPromotedLock, once the
// optimistic tries give up it takes a lock (a Mutex, Curator's
// InterProcessMutex format) on a separate path and tries again while
// holding it, like Curator's PromotedToLock. A node that does not exist
// reads as 0 and is created by the first change (its missing ancestors as
// containers); a node that holds anything but 8 bytes (or nothing) makes
// every call fail with ErrBadAtomicLong.
//
// NewAtomicCounter does no I/O. An AtomicCounter is safe for concurrent
// use.
type AtomicCounter struct {
	s    *Session
	path string // as given
	abs  string
	cfg  counterConfig
	lock *Mutex // with WithPromotedLock
	err  error
}

// CounterOption configures NewAtomicCounter.
type CounterOption func(*counterConfig)

type counterConfig struct {
	retry    RetryPolicy
	lockPath string
	err      error
}

// WithOptimisticRetry sets how an AtomicCounter's optimistic tries are
// paced after another client wrote first, and when they give up. Default:
// the Session's retry policy (WithRetryPolicy), or RetryNTimes(3, 10ms)
// with WithPromotedLock.
func WithOptimisticRetry(p RetryPolicy) CounterOption {
	return func(c *counterConfig) {
		if err := validatePolicy(p); err != nil && c.err == nil {
			c.err = err
		}
		c.retry = p
	}
}

// WithPromotedLock makes an AtomicCounter whose optimistic tries gave up
// take a Mutex on lockPath (relative to the Session's namespace; not the
// counter's path) and try again while it holds it, under the Session's
// retry policy, as Curator's PromotedToLock does. Curator clients that
// share the counter should use the same lock path. Default: no lock.
func WithPromotedLock(lockPath string) CounterOption {
	return func(c *counterConfig) {
		if err := validatePath(lockPath); err != nil && c.err == nil {
			c.err = err
		}
		c.lockPath = lockPath
	}
}

// AtomicResult is the outcome of an AtomicCounter change, as Curator's
// AtomicValue: whether it succeeded, the value before it and the value
// after it (for a change that did not succeed, the value last read).
type AtomicResult struct {
	Succeeded bool
	PreValue  int64
	PostValue int64
}

// NewAtomicCounter returns a counter at path (relative to the Session's
// namespace). It does no I/O; an invalid path, a nil session or a bad
// option is reported by every method.
func NewAtomicCounter(s *Session, path string, opts ...CounterOption) *AtomicCounter {
	c := &AtomicCounter{s: s, path: path}
	for _, o := range opts {
		if o == nil {
			c.cfg.err = invalidArg("nil CounterOption")
			continue
		}
		o(&c.cfg)
	}
	c.err = firstErr(c.cfg.err, checkRecipe(s, path))
	if c.err != nil {
		return c
	}
	c.abs = s.abs(path)
	if c.cfg.lockPath != "" {
		if c.cfg.lockPath == path {
			c.err = invalidArg("promoted lock path %s is the counter's own path: give the lock a path of its own", path)
			return c
		}
		c.lock = NewMutex(s, c.cfg.lockPath)
		if c.cfg.retry == nil {
			c.cfg.retry = RetryNTimes(3, 10*time.Millisecond)
		}
	}
	if c.cfg.retry == nil {
		c.cfg.retry = s.cfg.retry
	}
	return c
}

// Path returns the counter's path, as given to NewAtomicCounter.
func (c *AtomicCounter) Path() string { return c.path }

// Get returns the counter's value (0 when its node does not exist). It
// fails with ErrBadAtomicLong, ctx's error, ErrClosed or a ZooKeeper
// error.
// The value read is the one the Session's server holds: it reflects every
// change this Session made, but may lag a change another client has
// already seen acknowledged (ZooKeeper's reads are sequentially
// consistent, not linearizable). A change (Add, Set, CompareAndSet) is
// written only with the version it read, so a lagging read makes it try
// again, never write a value computed from it.
func (c *AtomicCounter) Get(ctx context.Context) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	v, _, err := c.read(ctx)
	return v, err
}

// Add adds delta to the counter (wrapping around on overflow, as Java
// does) and returns the values before and after. When it could not (the
// retry policy gave up while other clients kept writing first, or, with
// WithPromotedLock, also under the lock) it changes nothing and returns an
// error matching ErrRetriesExhausted. If the connection is lost before a
// write's reply, whether it happened is unknown: Add returns an error
// matching zk.ErrConnectionClosed rather than add again. Likewise when ctx
// ends after a write was sent: Add returns ctx's error, and the write may
// or may not have happened (it is never undone: other clients may have
// built on it).
func (c *AtomicCounter) Add(ctx context.Context, delta int64) (AtomicResult, error) {
	return c.update(ctx, func(pre int64) int64 { return pre + delta })
}

// Increment is Add(ctx, 1).
func (c *AtomicCounter) Increment(ctx context.Context) (AtomicResult, error) { return c.Add(ctx, 1) }

// Decrement is Add(ctx, -1).
func (c *AtomicCounter) Decrement(ctx context.Context) (AtomicResult, error) {
	return c.Add(ctx, -1)
}

// Set sets the counter to v whatever its value, and returns the values
// before and after, as Curator's trySet; it fails as Add does.
func (c *AtomicCounter) Set(ctx context.Context, v int64) (AtomicResult, error) {
	return c.update(ctx, func(int64) int64 { return v })
}

// CompareAndSet sets the counter to new only if it holds expected (a
// missing node holds 0, and is created; Curator's compareAndSet fails on
// one). When it holds another value it changes nothing and returns
// Succeeded false with that value as PreValue, and a nil error; it fails
// as Add does.
func (c *AtomicCounter) CompareAndSet(ctx context.Context, expected, new int64) (AtomicResult, error) {
	if c.err != nil {
		return AtomicResult{}, c.err
	}
	if ctx == nil {
		return AtomicResult{}, invalidArg("nil context")
	}
	bo := c.cfg.retry()
	for {
		pre, st, err := c.read(ctx)
		if err != nil {
			return AtomicResult{}, err
		}
		if pre != expected {
			return AtomicResult{PreValue: pre, PostValue: pre}, nil
		}
		ok, err := c.write(ctx, st, new)
		if err != nil {
			return AtomicResult{}, err
		}
		if ok {
			return AtomicResult{Succeeded: true, PreValue: pre, PostValue: new}, nil
		}
		if err := c.backoff(ctx, bo, pre); err != nil {
			return AtomicResult{PreValue: pre, PostValue: pre}, err
		}
	}
}

// update applies f optimistically, then under the promoted lock.
func (c *AtomicCounter) update(ctx context.Context, f func(int64) int64) (AtomicResult, error) {
	if c.err != nil {
		return AtomicResult{}, c.err
	}
	if ctx == nil {
		return AtomicResult{}, invalidArg("nil context")
	}
	r, err := c.tries(ctx, c.cfg.retry, f)
	if c.lock == nil || !errors.Is(err, ErrRetriesExhausted) {
		return r, err
	}
	lease, err := c.lock.Acquire(ctx)
	if err != nil {
		return r, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = lease.Release(rctx) // a release not confirmed goes on in the background
	}()
	// The tries under the lock end when the lock is lost.
	lctx, lcancel := lease.Context(ctx)
	defer lcancel()
	r, err = c.tries(lctx, c.s.cfg.retry, f)
	if err != nil && ctx.Err() == nil && lease.Err() != nil {
		err = lease.Err()
	}
	return r, err
}

// tries applies f until a write succeeds or the policy gives up.
func (c *AtomicCounter) tries(ctx context.Context, policy RetryPolicy, f func(int64) int64) (AtomicResult, error) {
	bo := policy()
	for {
		pre, st, err := c.read(ctx)
		if err != nil {
			return AtomicResult{}, err
		}
		post := f(pre)
		ok, err := c.write(ctx, st, post)
		if err != nil {
			return AtomicResult{PreValue: pre, PostValue: pre}, err
		}
		if ok {
			return AtomicResult{Succeeded: true, PreValue: pre, PostValue: post}, nil
		}
		if err := c.backoff(ctx, bo, pre); err != nil {
			return AtomicResult{PreValue: pre, PostValue: pre}, err
		}
	}
}

// backoff waits before the next try, or says the policy gave up.
func (c *AtomicCounter) backoff(ctx context.Context, bo BackOff, last int64) error {
	d := bo.NextBackOff()
	if d == Stop {
		return fmt.Errorf("%w: %s: other clients kept changing the counter (last read %d)", ErrRetriesExhausted, c.path, last)
	}
	return sleepCtx(ctx, d)
}

// read returns the counter's value and its node's Stat (nil when the node
// does not exist), waiting out a lost connection.
func (c *AtomicCounter) read(ctx context.Context) (int64, *zk.Stat, error) {
	for {
		data, st, err := c.s.get(ctx, c.abs)
		switch {
		case err == nil:
			v, err := decodeLong(c.path, data)
			return v, st, err
		case err == zk.ErrNoNode:
			return 0, nil, nil
		case isRetryable(err) || errors.Is(err, zk.ErrSessionExpired):
			if _, _, err := c.s.awaitConnected(ctx); err != nil {
				return 0, nil, err
			}
		default:
			return 0, nil, c.s.opError("getData", c.abs, err)
		}
	}
}

// write writes v over the node as read (st; nil: create it). It reports
// false when another client wrote or created it first.
func (c *AtomicCounter) write(ctx context.Context, st *zk.Stat, v int64) (bool, error) {
	data := binary.BigEndian.AppendUint64(nil, uint64(v))
	var err error
	op := "create"
	if st == nil {
		err = c.s.createShared(ctx, c.abs, data, true)
	} else {
		op = "setData"
		_, err = c.s.setVersioned(ctx, c.abs, data, st.Version)
	}
	switch {
	case err == nil:
		return true, nil
	case err == zk.ErrNodeExists || err == zk.ErrBadVersion || err == zk.ErrNoNode:
		return false, nil
	case isRetryable(err):
		return false, fmt.Errorf("zkrecipes: %s: connection lost before the reply; the change may or may not have been made: %w", c.path, err)
	}
	return false, c.s.opError(op, c.abs, err)
}

// decodeLong reads a value in Curator's DistributedAtomicLong format from
// the data of the node at path (as the user gave it): an empty node holds
// 0, as in Curator.
func decodeLong(path string, data []byte) (int64, error) {
	switch len(data) {
	case 0:
		return 0, nil
	case 8:
		return int64(binary.BigEndian.Uint64(data)), nil
	}
	return 0, fmt.Errorf("%w: %s holds %d bytes; it is not an AtomicCounter (use another path, or delete the node)", ErrBadAtomicLong, path, len(data))
}
