package zkrecipes

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The caches (TreeCache, NodeCache, and so GroupMember's view and
// discovery's ServiceCache) run on one PersistentWatch where the Session
// and its server can set one, and fall back to one-shot watches where they
// cannot (ErrPersistentWatchUnsupported): openCacheWatch is the seam
// between the two modes. Removing the persistent mode is removing this
// call.
//
// Setting and removing the watch run on the Session's background (which
// its Close waits for), so that a cache's Start returns when its context
// ends and its Close returns promptly even while the connection is cut
// off: PersistentWatch.Start and Close wait for the server, at most until
// the Session declares the connection lost. Close waits for the removal
// at most closeWatchWait, which a healthy connection needs far less than;
// a removal still waiting then goes on in the background, and a watch
// whose connection is lost is gone from the server with it.

// closeWatchWait bounds how long a cache's Close waits for the server to
// confirm that its watch is removed.
const closeWatchWait = 500 * time.Millisecond

// openCacheWatch sets a persistent watch on the node at path (relative;
// recursive: on its whole subtree) and returns once the server has it. It
// delivers its events on its batches channel, not Events: a cache takes
// all the notifications waiting together (handed over one at a time, a
// burst's built up behind small batches, each costing a round trip). It
// fails with ErrPersistentWatchUnsupported where the cache must use
// one-shot watches, with ctx's error (then a watch set meanwhile is
// removed in the background), or with ErrClosed.
func openCacheWatch(ctx context.Context, s *Session, path string, recursive bool) (*PersistentWatch, error) {
	w := NewPersistentWatch(s, path, WithRecursive(recursive))
	w.batches = make(chan []WatchEvent)
	var mu sync.Mutex
	abandoned := false
	res := make(chan error, 1)
	if !s.goBackground(0, func(context.Context) {
		err := w.Start(ctx) // on failure it leaves nothing on the server
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if err == nil {
				s.closeCacheWatch(w)
			}
			return
		}
		res <- err
	}) {
		return nil, ErrClosed
	}
	select {
	case err := <-res:
		return watchStarted(w, err)
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		select {
		case err := <-res: // it came meanwhile
			return watchStarted(w, err)
		default:
			abandoned = true
			return nil, ctx.Err()
		}
	}
}

func watchStarted(w *PersistentWatch, err error) (*PersistentWatch, error) {
	if errors.Is(err, ErrPersistentWatchUnsupported) {
		return nil, ErrPersistentWatchUnsupported
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// closeCacheWatch removes w from the server, waiting for that at most
// closeWatchWait; what it could not remove is logged.
func (s *Session) closeCacheWatch(w *PersistentWatch) {
	closeW := func() {
		if err := w.Close(context.Background()); err != nil && !s.isClosed() {
			s.cfg.log.Warn("zkrecipes: a cache's persistent watch may stay on the server until its connection ends",
				"path", w.Path(), "err", err)
		}
	}
	done := make(chan struct{})
	if !s.goBackground(0, func(context.Context) { defer close(done); closeW() }) {
		closeW() // the Session is closed: nothing to wait for
		return
	}
	t := time.NewTimer(closeWatchWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
