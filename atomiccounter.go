package zkrecipes

import (
	"bytes"
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
// after it (for a change that did not succeed, or whose outcome is
// unknown, the value last read).
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
// does) and returns the values before and after.
//
// The reply to Add's own write decides what it reports: Succeeded true
// and a nil error when the write was applied, even if, with
// WithPromotedLock, the lock was lost meanwhile (the write is versioned:
// it is atomic with or without the lock). An error without
// ErrOutcomeUnknown means nothing was changed: the retry policy gave up
// while other clients kept writing first (ErrRetriesExhausted), the lock
// was lost before the write was sent (ErrLockLost and its cause), ctx
// ended before it was sent, or another failure.
//
// When the write's reply is lost with the connection, Add reads the node
// once connected again: if the write was not applied (the node is
// unchanged, or another client's write took its version) it tries again
// as after any conflict. When the node cannot tell (it holds Add's value
// at the next version, which another client may have written too, or has
// changed further since) and when ctx ends after the write was sent, Add
// returns an error matching ErrOutcomeUnknown and its cause
// (zk.ErrConnectionClosed, ctx's error, ErrClosed): the write may or may
// not have been applied. It is never undone, since other clients may have
// built on it; read the counter before adding again.
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
// before and after, as Curator's trySet; it reports and fails as Add does.
func (c *AtomicCounter) Set(ctx context.Context, v int64) (AtomicResult, error) {
	return c.update(ctx, func(int64) int64 { return v })
}

// CompareAndSet sets the counter to new only if it holds expected (a
// missing node holds 0, and is created; Curator's compareAndSet fails on
// one). When it holds another value it changes nothing and returns
// Succeeded false with that value as PreValue, and a nil error; it fails
// as Add does (ErrOutcomeUnknown included).
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
	r, err := c.tries(ctx, ctx, c.cfg.retry, f)
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
	// Under the lock, the reads and the waits end when the lock is lost,
	// but a write already sent is never abandoned for it: its reply
	// decides the outcome. The write is versioned, so one that reaches the
	// server after the lock was lost is still atomic; the lock only spares
	// the contention.
	lctx, lcancel := lease.Context(ctx)
	defer lcancel()
	r, err = c.tries(lctx, ctx, c.s.cfg.retry, f)
	if err != nil && ctx.Err() == nil && lctx.Err() != nil && errors.Is(err, lctx.Err()) &&
		!errors.Is(err, ErrOutcomeUnknown) {
		err = lease.Err() // ended by the loss before a write was sent
	}
	return r, err
}

// tries applies f until a write succeeds or the policy gives up. Reads
// and waits run on ctx, writes on wctx (ctx or a parent of it): a write is
// sent only while ctx lasts, and its reply is awaited while wctx does.
func (c *AtomicCounter) tries(ctx, wctx context.Context, policy RetryPolicy, f func(int64) int64) (AtomicResult, error) {
	bo := policy()
	for {
		pre, st, err := c.read(ctx)
		if err != nil {
			return AtomicResult{}, err
		}
		if err := ctx.Err(); err != nil {
			return AtomicResult{PreValue: pre, PostValue: pre}, err
		}
		post := f(pre)
		ok, err := c.write(wctx, st, post)
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
// false when another client wrote or created it first. When the reply is
// lost, settle decides; an error matching ErrOutcomeUnknown means nobody
// can tell whether the write was applied.
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
	case replyLost(ctx, err):
		return c.settle(ctx, st, data, err)
	}
	return false, c.s.opError(op, c.abs, err)
}

// replyLost tells whether a request that failed with err may have been
// applied all the same: its connection or session ended (lostConnection),
// the Session was closed, or the caller's ctx ended, before its reply.
func replyLost(ctx context.Context, err error) bool {
	return lostConnection(err) || errors.Is(err, ErrClosed) ||
		ctx != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// settle decides whether the write of data over the node as read (st; nil:
// a create) was applied, after its reply was lost (cause). Once connected
// again (waited for as by the barriers, until ctx ends or the Session
// closes) it syncs (so that a write of this Session still on its way is
// applied first) and reads the node. A setData over version n was not
// applied when the same node is unchanged since the read (same mzxid) or
// holds other data at version n+1 (another client's write won), and
// write reports false. Anything else cannot tell: our data at n+1 may
// have been written by another client from the same value, a later
// version or a node created again may or may not follow ours, and a
// create leaves no trace of who made it. settle then returns an error
// matching ErrOutcomeUnknown and cause, never a result that says "not
// applied".
func (c *AtomicCounter) settle(ctx context.Context, st *zk.Stat, data []byte, cause error) (bool, error) {
	unknown := func(cause error) error {
		return fmt.Errorf("%w: %s: no reply to the counter's write: %w", ErrOutcomeUnknown, c.path, cause)
	}
	if st == nil || ctx.Err() != nil {
		return false, unknown(cause)
	}
	for {
		err := c.s.sync(ctx, c.abs)
		var got []byte
		var now *zk.Stat
		if err == nil {
			got, now, err = c.s.get(ctx, c.abs)
		}
		switch {
		case err == nil:
			if notApplied(st, now, got, data) {
				return false, nil
			}
			return false, unknown(cause)
		case err == zk.ErrNoNode:
			return false, unknown(cause)
		case c.s.awaitReconnect(ctx, err):
			continue // connected again: read again
		case ctx.Err() != nil:
			return false, unknown(ctx.Err())
		}
		return false, unknown(c.s.opError("getData", c.abs, err))
	}
}

// notApplied tells whether the node as read now (now, holding got) proves
// that a setData of data over the node as read before (st) was not
// applied: the same node, unchanged since, or holding other data at the
// version the write would have made.
func notApplied(st, now *zk.Stat, got, data []byte) bool {
	return now.Czxid == st.Czxid && (now.Mzxid == st.Mzxid ||
		now.Version == st.Version+1 && !bytes.Equal(got, data))
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
