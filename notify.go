package zkrecipes

import (
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// notifyRoutes hands node notifications to the caches that asked for a
// subtree's, so that a cache of many nodes needs no goroutine per watch:
// go-zookeeper publishes every notification through the Session's event
// callback before it fills the watch's own channel, which a cache leaves
// unread (it is buffered and closed by go-zookeeper).
//
// On a Session made by NewSession the notifications come through the
// channel zk.Connect returned, which go-zookeeper fills without waiting:
// a burst of more than its buffer can drop some (see TreeCache).
type notifyRoutes struct {
	mu     sync.Mutex
	routes map[*notifyRoute]struct{}
}

type notifyRoute struct {
	abs string         // the subtree's root, absolute
	fn  func(zk.Event) // called on the client's receiving goroutine: must not block
}

// onEvent is the client's event callback: it never blocks. Node
// notifications go to the routes, then every event to enqueue.
func (s *Session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		s.notes.route(ev)
	}
	s.enqueue(ev)
}

// watchTree has fn called with every notification on abs or below it
// (node events only) until the returned function is called.
func (s *Session) watchTree(abs string, fn func(zk.Event)) (cancel func()) {
	r := &notifyRoute{abs: abs, fn: fn}
	n := &s.notes
	n.mu.Lock()
	if n.routes == nil {
		n.routes = map[*notifyRoute]struct{}{}
	}
	n.routes[r] = struct{}{}
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		delete(n.routes, r)
		n.mu.Unlock()
	}
}

// route is called by the client's event callback with a node event.
func (n *notifyRoutes) route(ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
	default:
		return // EventNotWatching: a session ended; the caches re-read on the next one
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for r := range n.routes {
		if ev.Path == r.abs || strings.HasPrefix(ev.Path, r.abs) && len(ev.Path) > len(r.abs) && ev.Path[len(r.abs)] == '/' {
			r.fn(ev)
		}
	}
}
