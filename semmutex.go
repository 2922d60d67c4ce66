package zkrecipes

import "context"

// SemaphoreMutex is a distributed mutual-exclusion lock that is not
// reentrant, wire-compatible with Curator's InterProcessSemaphoreMutex: a
// Semaphore of one lease on the same layout (P/locks, P/leases).
//
// Unlike Mutex, holding it is not tied to a goroutine: a goroutine that
// holds it and calls Acquire again waits like any other caller, until
// someone releases the lease or ctx ends; any goroutine that has the Lease
// may release it.
//
// NewSemaphoreMutex does no I/O. A SemaphoreMutex is safe for concurrent
// use.
type SemaphoreMutex struct {
	sem *Semaphore
}

// NewSemaphoreMutex returns a non-reentrant lock on path (relative to the
// Session's namespace). It does no I/O; an invalid path, a nil session, a
// bad option or node data too large (ErrDataTooLarge) is reported by every
// method. WithNodeData sets the data of its nodes; WithFastHandoff applies
// to its internal mutex.
func NewSemaphoreMutex(s *Session, path string, opts ...LockOption) *SemaphoreMutex {
	sem := NewSemaphore(s, path, 1)
	if sem.err == nil {
		sem.cfg.lock, sem.err = buildLockConfig(opts)
		sem.lock.fast = sem.cfg.lock.fast
	}
	if sem.err == nil {
		sem.err = sem.checkData()
	}
	return &SemaphoreMutex{sem: sem}
}

// Acquire blocks until the caller holds the lock or ctx ends, with the
// guarantees and failure modes of Semaphore.Acquire for one lease.
func (m *SemaphoreMutex) Acquire(ctx context.Context) (*Lease, error) {
	return first(m.sem.Acquire(ctx, 1))
}

// TryAcquire is Acquire that fails at once with an error matching
// ErrLocked, leaving no node behind, when the lock is held.
func (m *SemaphoreMutex) TryAcquire(ctx context.Context) (*Lease, error) {
	return first(m.sem.TryAcquire(ctx, 1))
}

// Path returns the lock's path, as given to NewSemaphoreMutex.
func (m *SemaphoreMutex) Path() string { return m.sem.path }

func first(leases []*Lease, err error) (*Lease, error) {
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// configErr returns what NewSemaphoreMutex found wrong (see MultiLock).
func (m *SemaphoreMutex) configErr() error { return m.sem.err }
