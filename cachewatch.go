package zkrecipes

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// cacheWatch is the seam between a cache and the persistent watch it runs
// on (persistentwatch.go): its notes in order, and its removal.
type cacheWatch interface {
	// notes returns the watch's notes, in order; it is closed when the
	// watch ends.
	notes() <-chan watchNote
	// close removes the watch from the server (see closeWatch for how
	// long it waits) and ends it.
	close()
}

// watchNote is one note of a persistent watch: a node notification (Path
// absolute), or the news that notifications may have been missed (the
// watch was set again on a new connection or session).
type watchNote struct {
	ev     zk.Event
	missed bool
}

// errNoPersistentWatch: the Session or its server cannot set a persistent
// watch; the caches fall back to one-shot watches.
var errNoPersistentWatch = errors.New("zkrecipes: persistent watches unsupported")

// openCacheWatch sets a persistent watch on abs (recursive: on its whole
// subtree) and returns once the server has it.
func openCacheWatch(ctx context.Context, s *Session, abs string, recursive bool) (cacheWatch, error) {
	return nil, errNoPersistentWatch
}
