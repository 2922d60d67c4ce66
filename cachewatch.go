package zkrecipes

import (
	"context"
	"errors"
)

// The caches (TreeCache, NodeCache, and so GroupMember's view and
// discovery's ServiceCache) run on one PersistentWatch where the Session
// and its server can set one, and fall back to one-shot watches where they
// cannot (ErrPersistentWatchUnsupported): openCacheWatch is the seam
// between the two modes. Removing the persistent mode is removing this
// call.

// openCacheWatch sets a persistent watch on the node at path (relative;
// recursive: on its whole subtree) and returns once the server has it. It
// fails with ErrPersistentWatchUnsupported where the cache must use
// one-shot watches, with ctx's error, or with ErrClosed.
func openCacheWatch(ctx context.Context, s *Session, path string, recursive bool) (*PersistentWatch, error) {
	w := NewPersistentWatch(s, path, WithRecursive(recursive))
	if err := w.Start(ctx); err != nil {
		if errors.Is(err, ErrPersistentWatchUnsupported) {
			return nil, ErrPersistentWatchUnsupported
		}
		return nil, err
	}
	return w, nil
}

// closeCacheWatch removes w from the server (PersistentWatch.Close says
// how long that may wait) and reports what it could not remove.
func (s *Session) closeCacheWatch(w *PersistentWatch) {
	if err := w.Close(); err != nil && !s.isClosed() {
		s.cfg.log.Warn("zkrecipes: a cache's persistent watch may be left on the server until the connection closes",
			"path", w.Path(), "err", err)
	}
}
