package zkrecipes

import (
	"context"
	"fmt"
	"sync"
)

// cacheRun is the life of a cache (NodeCache, TreeCache): Start once, two
// goroutines on the Session's workers (the one that follows the server,
// and the dispatcher of its events) until Close, the Session's Close, or
// a read that cannot pass; then the events channel closes.
type cacheRun struct {
	events chan CacheEvent
	ready  chan struct{} // closed by the follower once the first load is in
	done   chan struct{} // closed when both goroutines have ended

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	stopErr error
}

func newCacheRun() cacheRun {
	return cacheRun{events: make(chan CacheEvent), ready: make(chan struct{}), done: make(chan struct{})}
}

// claim marks the cache started, once: ErrCacheStarted when it was
// started before, and also ErrClosed when closed. run ends with the
// Session, its loss for good, or close.
func (r *cacheRun) claim(s *Session) (run context.Context, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, &startAfterClose{once: ErrCacheStarted}
	}
	if r.started {
		return nil, ErrCacheStarted
	}
	r.started = true
	run, r.cancel = s.untilEnded()
	return run, nil
}

// launch runs follow and dispatch under run (from claim) until it ends,
// then after (if not nil). It returns once ready closes (nil), or with
// ctx's error, ErrClosed or the follower's error; after a failure the
// cache is closed.
func (r *cacheRun) launch(ctx, run context.Context, s *Session, follow, dispatch func(context.Context), after func()) error {
	cancel := r.cancel
	var wg sync.WaitGroup
	wg.Add(2)
	if !s.spawn(func() { defer wg.Done(); follow(run) }) {
		wg.Done()
		cancel()
	}
	if !s.spawn(func() { defer wg.Done(); dispatch(run) }) {
		wg.Done()
		close(r.events)
	}
	go func() { // ends once both have: their ctx ends with the Session or close
		wg.Wait()
		if after != nil {
			after()
		}
		close(r.done)
	}()
	select {
	case <-r.ready:
		return nil
	case <-run.Done():
		r.close()
		if err := r.stopped(); err != nil {
			return err
		}
		return s.endErr()
	case <-ctx.Done():
		r.close()
		return ctx.Err()
	}
}

// end is the follower's last word: why it stopped (ErrClosed once the
// Session is closed, its error once it is lost for good), kept unless
// the cache was closed; it stops the dispatcher.
func (r *cacheRun) end(s *Session, err error) {
	if s.ended() {
		err = s.endErr()
	}
	r.mu.Lock()
	if !r.closed {
		r.stopErr = err
	}
	cancel := r.cancel
	r.mu.Unlock()
	cancel()
}

// stopped is why the cache stopped on its own, nil while it runs or once
// closed.
func (r *cacheRun) stopped() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopErr
}

// close stops the cache and waits for its goroutines. It is idempotent.
func (r *cacheRun) close() {
	r.stop()
	<-r.done
}

// closeWithin stops the cache and waits for its goroutines (and so for the
// removal of its watch) within ctx: ErrReleaseDeferred, wrapping ctx's
// error and naming the cache's path, when ctx ends first; the goroutines then end on their own (the watch's
// removal waits at most closeWatchWait). It is idempotent and safe to
// call concurrently.
func (r *cacheRun) closeWithin(ctx context.Context, path string) error {
	if ctx == nil {
		return invalidArg("nil context")
	}
	r.stop()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: cache of %s: its goroutines and watch removal go on: %w", ErrReleaseDeferred, path, ctx.Err())
	}
}

// stop stops the cache without waiting. It is idempotent.
func (r *cacheRun) stop() {
	r.mu.Lock()
	if !r.started {
		r.started, r.closed = true, true
		r.mu.Unlock()
		close(r.events)
		close(r.done)
		return
	}
	r.closed = true
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
