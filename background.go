package zkrecipes

import (
	"context"
	"time"
)

// goBackground runs fn on a goroutine that Close waits for, with a context
// that ends when the Session closes (and after timeout, if it is
// positive). After Close it does nothing.
func (s *Session) goBackground(timeout time.Duration, fn func(ctx context.Context)) {
	s.spawn(func() {
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

// spawn runs fn on a goroutine the Session waits for in Close (a worker,
// see workers.go). It reports false, and does not run fn, when the Session
// is closed.
func (s *Session) spawn(fn func()) bool {
	s.opsMu.RLock()
	defer s.opsMu.RUnlock()
	if s.isClosed() {
		return false
	}
	s.startLocked(fn)
	return true
}
