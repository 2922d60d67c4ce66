package zkrecipes

import (
	"context"
	"sync/atomic"
	"time"
)

// Request workers: a Session runs every request that must not block its
// caller on a goroutine it counts, kept for the next task once done (a new
// goroutine's stack growth was as costly as the recipe; docs/design-session.md).
// Tasks are the Session's own code, never a user's callback: a worker's
// goroutine id, which reentrancy is keyed on, carries over between tasks.

// maxIdleWorkers bounds the goroutines of one Session that wait for a task.
const maxIdleWorkers = 16

// workers hands tasks to idle worker goroutines.
type workers struct {
	tasks chan func() // unbuffered: a send succeeds only into a waiting worker
	idle  atomic.Int32
}

// startLocked runs fn on an idle worker, or on a new one. The caller holds
// s.opsMu (read) and has seen the Session open, so Close waits for it.
func (s *Session) startLocked(fn func()) {
	select {
	case s.workers.tasks <- fn:
		return
	default:
	}
	s.wg.Add(1)
	go s.work(fn)
}

// work runs fn, then the tasks handed to it, until the Session closes or
// enough other workers wait.
func (s *Session) work(fn func()) {
	defer s.wg.Done()
	for {
		fn()
		fn = nil // nothing of the last task stays reachable while idle
		if s.workers.idle.Add(1) > maxIdleWorkers {
			s.workers.idle.Add(-1)
			return
		}
		select {
		case fn = <-s.workers.tasks:
			s.workers.idle.Add(-1)
		case <-s.closedCh:
			s.workers.idle.Add(-1)
			return
		}
	}
}

// goBackground runs fn on a goroutine that Close waits for, with a context
// that ends when the Session closes (and after timeout, if it is
// positive). After Close it does nothing and reports false.
func (s *Session) goBackground(timeout time.Duration, fn func(ctx context.Context)) bool {
	return s.spawn(func() {
		ctx, cancel := ctxUntil(s.closedCh)
		defer cancel()
		if timeout > 0 {
			var c2 context.CancelFunc
			ctx, c2 = context.WithTimeout(ctx, timeout)
			defer c2()
		}
		fn(ctx)
	})
}

// ctxUntil returns a context that ends when stop closes or cancel is
// called, whichever is first.
func ctxUntil(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// spawn runs fn on a worker, which Close waits for. It reports false, and
// does not run fn, when the Session is closed.
func (s *Session) spawn(fn func()) bool {
	s.opsMu.RLock()
	defer s.opsMu.RUnlock()
	if s.isClosed() {
		return false
	}
	s.startLocked(fn)
	return true
}
