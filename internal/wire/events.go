package wire

import (
	"bytes"
	"encoding/binary"
)

// Notifications. A server sends a connection one notification per change,
// however many of its watches the change fires. So every notification
// still passes to go-zookeeper, which may hold a one-shot watch on the
// same node (go-zookeeper hands one it holds no watch for to its event
// callback, and drops it from its event channel when that is full), and a
// copy goes to every watch armed on that connection that covers the path:
// the node itself for a plain persistent watch (all event types), the
// node and its subtree for a recursive one (NodeChildrenChanged excluded:
// only a one-shot watch of go-zookeeper's can have caused it).

// Notification is a watch notification a persistent watch covers.
type Notification struct {
	Type int32  // 1 NodeCreated, 2 NodeDeleted, 3 NodeDataChanged, 4 NodeChildrenChanged
	Path string // absolute
	Zxid int64  // the change's zxid (servers 3.9 and later; -1 before)
}

// tapping tells whether notifications must be looked at: for the
// persistent watches, or for go-zookeeper's one-shot watches on their
// paths (shots.go).
func (l *Layer) tapping() bool { return l.watching() || l.shots.n.Load() > 0 }

// notified is called on the reading goroutine with a whole notification
// frame (length, xid -1, zxid, err, type, state, path) that passed to
// go-zookeeper: it goes to every watch armed on c that covers it.
func (l *Layer) notified(c *conn, b []byte) {
	if len(b) < 32 {
		return
	}
	zxid := int64(binary.BigEndian.Uint64(b[8:16]))
	typ := int32(binary.BigEndian.Uint32(b[20:24]))
	n := int(int32(binary.BigEndian.Uint32(b[28:32])))
	if n < 0 || 32+n > len(b) || typ < 1 || typ > 4 {
		return
	}
	path := b[32 : 32+n]
	if l.shots.n.Load() > 0 {
		l.shots.fired(path, typ)
	}
	var ev *Notification
	for _, w := range l.registered() {
		if w.OnEvent == nil || !w.isArmedOn(c) {
			continue
		}
		if !w.Recursive && (typ == 1 || typ == 2 || typ == 4) && l.carried(c, w, path, typ) {
			if typ != 4 {
				w.OnEvent(Notification{Type: 4, Path: w.Path, Zxid: zxid}) // derived (sharedpath.go)
			}
			continue
		}
		if !w.covers(string(path), typ) {
			continue
		}
		if ev == nil {
			ev = &Notification{Type: typ, Path: string(path), Zxid: zxid}
		}
		w.OnEvent(*ev)
	}
}

// carried tells whether a notification (path, typ: NodeCreated,
// NodeDeleted or NodeChildrenChanged) bears on the NodeChildrenChanged of
// the plain watch w whose node's server watch on c is recursive: a child
// of w's node created or deleted (typ 1, 2), or a real NodeChildrenChanged
// there (4), which w does not take (sharedpath.go).
func (l *Layer) carried(c *conn, w *Watch, path []byte, typ int32) bool {
	if typ == 4 {
		if string(path) != w.Path {
			return false
		}
	} else if !isChild(w.Path, path) {
		return false
	}
	return l.recOn(c, w.Path)
}

// isChild tells whether path is a direct child of parent.
func isChild(parent string, path []byte) bool {
	i := bytes.LastIndexByte(path, '/')
	if i < 0 || i == len(path)-1 {
		return false
	}
	if i == 0 {
		return parent == "/"
	}
	return string(path[:i]) == parent
}
