package zkrecipes

import (
	"context"
	"fmt"
	"reflect"
)

// Locker is what every exclusive lock recipe of this package offers:
// Mutex, each side of an RWMutex, SemaphoreMutex and MultiLock. Acquire
// blocks until held or ctx ends; TryAcquire fails with ErrLocked instead of
// waiting. Neither returns a nil Lease without an error.
type Locker interface {
	Acquire(ctx context.Context) (*Lease, error)
	TryAcquire(ctx context.Context) (*Lease, error)
}

// MultiLock holds several locks as one, like Curator's InterProcessMultiLock:
// it acquires its members one after the other in the order given, and
// either holds them all or none.
//
// Give every MultiLock that shares members the same order: two MultiLocks
// that take the same locks in different orders can each hold one and wait
// for the other until their ctx ends.
//
// The lease it returns is composite (see Lease.Members): it is lost as soon
// as any member is lost, and the other members are then released; Release
// releases the members in reverse order. Its Token, Path and Check are
// those of its newest member, whose node was created after every other
// member was held, so the tokens of successive holders of one MultiLock
// increase; use each member's Check to make a write conditional on all.
//
// NewMultiLock does no I/O. A MultiLock is safe for concurrent use if its
// members are.
type MultiLock struct {
	locks []Locker
	err   error
}

// NewMultiLock returns a lock over locks, taken in the order given. It does
// no I/O; no locks or a nil one is reported by every method as
// ErrInvalidArgument, and a member of this package built with a bad path,
// a nil session or a bad option by that member's error, before any member
// is acquired.
func NewMultiLock(locks ...Locker) *MultiLock {
	m := &MultiLock{locks: append([]Locker(nil), locks...)}
	if len(locks) == 0 {
		m.err = invalidArg("MultiLock of no locks")
	}
	for i, l := range locks {
		if l == nil || isNilPointer(l) {
			m.err = invalidArg("MultiLock member %d is nil", i)
		} else if v, ok := l.(validated); ok && m.err == nil {
			m.err = v.configErr() // a bad member fails before any member is taken
		}
	}
	return m
}

// validated is implemented by this package's lockers: configErr returns
// what their constructor found wrong (bad path, nil session, bad option).
type validated interface{ configErr() error }

func (m *MultiLock) configErr() error { return m.err }

// isNilPointer reports a nil pointer inside a non-nil interface, such as
// a (*Mutex)(nil) passed as a Locker.
func isNilPointer(l Locker) bool {
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Acquire acquires every member in order, each with its own Acquire, and
// returns the composite lease. On failure or cancel it releases the
// members already held, in reverse order, on a short detached context,
// and returns the member's error (ctx's error, ErrClosed, ...). If a
// member was lost before the last one was acquired, it releases the rest
// and returns that loss (matching ErrLockLost).
func (m *MultiLock) Acquire(ctx context.Context) (*Lease, error) { return m.acquire(ctx, false) }

// TryAcquire is Acquire with each member's TryAcquire: it fails with an
// error matching ErrLocked, holding nothing, when any member is held by
// another owner.
func (m *MultiLock) TryAcquire(ctx context.Context) (*Lease, error) { return m.acquire(ctx, true) }

func (m *MultiLock) acquire(ctx context.Context, try bool) (*Lease, error) {
	if m.err != nil {
		return nil, m.err
	}
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	got := make([]*Lease, 0, len(m.locks))
	fail := func(err error) (*Lease, error) {
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = releaseAll(cctx, got)
		return nil, err
	}
	for i, lk := range m.locks {
		var l *Lease
		var err error
		if try {
			l, err = lk.TryAcquire(ctx)
		} else {
			l, err = lk.Acquire(ctx)
		}
		if err != nil {
			return fail(err)
		}
		if l == nil {
			return fail(fmt.Errorf("zkrecipes: MultiLock member %d returned no lease", i))
		}
		got = append(got, l)
	}
	for _, l := range got {
		if err := l.Err(); err != nil {
			return fail(err)
		}
	}
	return &Lease{g: newGroup(got)}, nil
}
