package wire

import "sync"

// Several persistent watches on one path (a NodeCache's plain watch beside
// a TreeCache's recursive one). 3.6 to 3.8 keep the mode set last, for the
// data and the child watch of the path alike, so no order of two addWatch
// gives both: recursive drops the path's NodeChildrenChanged, plain drops
// the subtree. The rule there (the probe found one mode per path): the
// server watch of a path is recursive while any registered watch on it
// is, and every addWatch the layer writes on that path says so (modeOn),
// so that no add, re-arm or re-add turns it plain. A plain watch carried
// by it gets every event of its node from it but NodeChildrenChanged,
// which the layer derives from the NodeCreated and NodeDeleted of the
// node's direct children the recursive watch delivers (events.go): the
// server fires NodeChildrenChanged of a node exactly on those
// (DataTree.createNode, deleteNode), with the same zxid, right after
// them. The layer knows the mode the server has from the replies: the
// reply to an addWatch comes after every notification of the mode before
// it and before every one of the mode it set (recOn). A real
// NodeChildrenChanged on such a path can only be go-zookeeper's one-shot
// child watch firing: a plain watch takes the derived one only, so it
// never sees one twice. (A child the Session may not read is not notified
// to a recursive watch on 3.8.4 and later, CVE-2024-23944: its creation
// is not derived either.)
// Until the probe has answered, each watch is written in its own mode,
// the plain ones first, so the last one a 3.6 to 3.8 server reads is
// recursive; a plain one written on a path whose recursive watch is
// armed is followed by that recursive watch again.
//
// Closing one of several watches on a path there removes nothing: the
// server watch stays, serving the others (the notifications only the
// closed one wanted are dropped by covers), until the last one goes or
// the connection does. Removing every watch of the path and setting the
// others again would open a window in which a change reaches none of
// them.

// recPaths are the paths whose server watch is recursive, each with the
// connection it is so on, on a server that keeps one mode per path.
type recPaths struct {
	mu sync.Mutex
	on map[string]*conn
}

// set notes whether path's server watch on c is recursive.
func (r *recPaths) set(c *conn, path string, rec bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case rec:
		if r.on == nil {
			r.on = make(map[string]*conn)
		}
		r.on[path] = c
	case r.on[path] == c:
		delete(r.on, path)
	}
}

// is tells whether path's server watch on c is recursive.
func (r *recPaths) is(c *conn, path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.on[path] == c
}

// setRec notes the mode of path's server watch on c, as the reply to an
// addWatch of the layer's says (mode), on a server that keeps one mode
// per path.
func (l *Layer) setRec(c *conn, path string, mode int32) {
	l.w.rec.set(c, path, mode == modePersistentRecursive && !c.watchModes().typed())
}

// recOn tells whether path's server watch on c is recursive on a server
// that keeps one mode per path: a plain watch on path then derives its
// NodeChildrenChanged.
func (l *Layer) recOn(c *conn, path string) bool {
	return l.w.rec.is(c, path) && !c.watchModes().typed()
}

// onPath tells whether a registered watch has path, and whether a
// recursive one does.
func (l *Layer) onPath(path string) (found, recursive bool) {
	for _, x := range l.registered() {
		if x.Path == path {
			found = true
			recursive = recursive || x.Recursive
		}
	}
	return found, recursive
}

// modeOn is the mode the layer writes for w on c: on a server known to
// keep one mode per path, recursive when any watch on w's path is; else
// w's own.
func (l *Layer) modeOn(c *conn, w *Watch) int32 {
	if !w.Recursive && c.watchModes().perPath() {
		if _, rec := l.onPath(w.Path); rec {
			return modePersistentRecursive
		}
	}
	return w.mode()
}
