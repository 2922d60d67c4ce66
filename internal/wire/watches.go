package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
)

// Persistent watches (ZooKeeper 3.6's addWatch) on the layer's own
// requests. A server keeps a connection's watches with the connection, so
// the layer sets every registered watch again on each new connection, as
// soon as its handshake reply is read (before go-zookeeper writes anything
// on it): the reply to that addWatch, read in order with the rest, arms
// the watch on that connection and tells its owner (OnReset) before any
// notification that follows it.
//
// Notifications. A server sends a connection one notification per change,
// however many of its watches the change fires. So every notification
// still passes to go-zookeeper, which may hold a one-shot watch on the
// same node (go-zookeeper hands one it holds no watch for to its event
// callback, and drops it from its event channel when that is full), and a
// copy goes to every watch armed on that connection that covers the path:
// the node itself for a plain persistent watch (all event types), the
// node and its subtree for a recursive one (NodeChildrenChanged excluded:
// only a one-shot watch of go-zookeeper's can have caused it).
//
// Servers 3.6 to 3.8 keep one watch mode per connection and path
// (ZOOKEEPER-4466, fixed in 3.9): a one-shot watch set on a node that has
// a persistent one turns it back into a one-shot. So after every frame of
// go-zookeeper's that sets a watch on the path of a persistent watch
// (getData, exists, getChildren with the watch flag; SetWatches after a
// reconnection), the layer writes that persistent watch's addWatch again,
// right behind it. On 3.9 and later that addWatch changes nothing.
//
// Several persistent watches on one path (a NodeCache's plain watch beside
// a TreeCache's recursive one). 3.6 to 3.8 keep the mode set last, for the
// data and the child watch of the path alike, so no order of two addWatch
// gives both: recursive drops the path's NodeChildrenChanged, plain drops
// the subtree. The rule there (the probe answered "untyped"): the server
// watch of a path is recursive while any registered watch on it is, and
// every addWatch the layer writes on that path says so (mode), so that no
// add, re-arm or re-add turns it plain. A plain watch carried by it gets
// every event of its node from it but NodeChildrenChanged, which the
// layer derives from the NodeCreated and NodeDeleted of the node's direct
// children the recursive watch delivers: the server fires
// NodeChildrenChanged of a node exactly on those (DataTree.createNode,
// deleteNode), with the same zxid, right after them. The layer knows the
// mode the server has from the replies: the reply to an addWatch comes
// after every notification of the mode before it and before every one of
// the mode it set (recOn). A real NodeChildrenChanged on such a path can
// only be go-zookeeper's one-shot child watch firing: a plain watch takes
// the derived one only, so it never sees one twice. (A child the Session
// may not read is not notified to a recursive watch on 3.8.4 and later,
// CVE-2024-23944: its creation is not derived either.)
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
// them. Where a watch must be set again after such a gap (putBack, and a
// recursive watch behind a plain add), the zxids of the replies on either
// side tell whether anything happened meanwhile: a server processes no
// read while it applies a write (CommitProcessor), so two replies with
// the same zxid prove no change was made between them; otherwise the
// watch's owner is told as on a reconnection (OnReset).
//
// Resumed sessions (resume.go). The replies of a resumed connection wait
// until go-zookeeper has written SetWatches, so that go-zookeeper reads
// no zxid before it builds that request. The replies to the layer's own
// requests are not go-zookeeper's and leave its last zxid alone, so the
// hold need not apply to them: a reply of the layer's that arrives while
// the credentials' replies are let through is taken out at once (else
// the credentials' reply behind it would wait for the hold's bound). Any
// other own reply waits with the rest, at most the hold's bound; the
// notifications after it wait too, so the order (OnReset first) stands.

// addWatchOp is the opcode AddWatch sends: OpAddWatch but in tests that
// play a server without it (SetAddWatchOp).
var addWatchOp atomic.Int32

func init() { addWatchOp.Store(OpAddWatch) }

// SetAddWatchOp makes AddWatch send opcode op instead of addWatch (tests
// only: an opcode the server does not know plays a 3.5 server) and returns
// the function that restores it.
func SetAddWatchOp(op int32) (restore func()) {
	old := addWatchOp.Swap(op)
	return func() { addWatchOp.Store(old) }
}

// Watch modes of addWatch.
const (
	modePersistent          = 0
	modePersistentRecursive = 1
)

// watcher types of removeWatches.
const (
	watcherAny                 = 3
	watcherPersistent          = 4
	watcherPersistentRecursive = 5
)

// Notification is a watch notification a persistent watch covers.
type Notification struct {
	Type int32  // 1 NodeCreated, 2 NodeDeleted, 3 NodeDataChanged, 4 NodeChildrenChanged
	Path string // absolute
	Zxid int64  // the change's zxid (servers 3.9 and later; -1 before)
}

// Watch is a persistent watch of the layer. Set Path and Recursive, and
// the hooks (called on the connection's reading goroutine: they must not
// block), then AddWatch it.
type Watch struct {
	Path      string
	Recursive bool
	OnEvent   func(Notification)
	// OnReset is told that the watch was set again on a new connection,
	// of session sid (newSession: another session than the last one it
	// was set in), before any of that connection's notifications.
	OnReset func(sid int64, newSession bool)
	// OnFail is told that the server refused to set the watch again on a
	// new connection (code); the watch is then no longer registered.
	OnFail func(code int32)

	gone bool // unregistered: never registered again (guarded by the layer's registry lock)

	mu      sync.Mutex
	armedOn *conn // the connection the watch is set on
	sid     int64 // the session it was last set in
	first   chan struct{}
	firstOK bool
	code    int32 // the first add's error code
}

func (w *Watch) mode() int32 {
	if w.Recursive {
		return modePersistentRecursive
	}
	return modePersistent
}

func (w *Watch) covers(path string, typ int32) bool {
	if !w.Recursive {
		return path == w.Path
	}
	if typ == 4 { // NodeChildrenChanged
		return false
	}
	return path == w.Path || strings.HasPrefix(path, w.Path) && (w.Path == "/" || path[len(w.Path)] == '/')
}

func (w *Watch) isArmedOn(c *conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.armedOn == c
}

// watches guards the changes to the layer's registry (wlist): a
// copy-on-write slice, read without a lock on every notification and on
// every frame written.
type watches struct {
	mu sync.Mutex

	recMu sync.Mutex
	rec   map[string]*conn // paths whose server watch is recursive on that connection (3.6 to 3.8)
}

// setRec notes the mode of path's server watch on c, as the reply to an
// addWatch of the layer's says (mode), on a server that keeps one mode
// per path.
func (l *Layer) setRec(c *conn, path string, mode int32) {
	l.w.recMu.Lock()
	defer l.w.recMu.Unlock()
	switch {
	case mode == modePersistentRecursive && c.own.typed.Load() != 1:
		if l.w.rec == nil {
			l.w.rec = make(map[string]*conn)
		}
		l.w.rec[path] = c
	case l.w.rec[path] == c:
		delete(l.w.rec, path)
	}
}

// recOn tells whether path's server watch on c is recursive on a server
// that keeps one mode per path: a plain watch on path then derives its
// NodeChildrenChanged.
func (l *Layer) recOn(c *conn, path string) bool {
	l.w.recMu.Lock()
	defer l.w.recMu.Unlock()
	return l.w.rec[path] == c && c.own.typed.Load() != 1
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
	if !w.Recursive && c.own.typed.Load() == -1 {
		if _, rec := l.onPath(w.Path); rec {
			return modePersistentRecursive
		}
	}
	return w.mode()
}

// gap is the zxid of the reply before a gap in which a watch was not set
// as it should be, for the reply to the addWatch that closes the gap.
type gap struct {
	zxid atomic.Int64
	set  atomic.Bool
}

func gapAt(zxid int64) *gap {
	g := &gap{}
	g.mark(zxid)
	return g
}

func (g *gap) mark(zxid int64) { g.zxid.Store(zxid); g.set.Store(true) }

// changed tells whether a change may have been made between the reply
// that opened the gap and one with zxid.
func (g *gap) changed(zxid int64) bool { return !g.set.Load() || g.zxid.Load() != zxid }

func (l *Layer) watching() bool {
	p := l.wlist.Load()
	return p != nil && len(*p) > 0
}

// tapping tells whether notifications must be looked at: for the
// persistent watches, or for go-zookeeper's one-shot watches on their
// paths (shots.go).
func (l *Layer) tapping() bool { return l.watching() || l.shots.n.Load() > 0 }

func (l *Layer) registered() []*Watch {
	if p := l.wlist.Load(); p != nil {
		return *p
	}
	return nil
}

// register adds w to the registry, unless it was unregistered before
// (false): a watch removed while its AddWatch was on its way stays removed.
func (l *Layer) register(w *Watch) bool {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	if w.gone {
		return false
	}
	list := append(append([]*Watch(nil), l.registered()...), w)
	l.wlist.Store(&list)
	return true
}

// unregistered drops w for good and reports whether another registered
// watch has its path and mode (the server keeps one for both), and whether
// w was registered.
func (l *Layer) unregistered(w *Watch) (shared, found bool) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	w.gone = true
	var list []*Watch
	for _, x := range l.registered() {
		if x == w {
			found = true
			continue
		}
		list = append(list, x)
		if x.Path == w.Path && x.Recursive == w.Recursive {
			shared = true
		}
	}
	l.wlist.Store(&list)
	return shared, found
}

func addBody(path string, mode int32) []byte {
	b := make([]byte, 4+len(path)+4)
	binary.BigEndian.PutUint32(b[0:4], uint32(len(path)))
	copy(b[4:], path)
	binary.BigEndian.PutUint32(b[4+len(path):], uint32(mode))
	return b
}

// ErrRemoved is AddWatch's error for a watch that RemoveWatch or Forget
// took off before AddWatch could set it: it is not set.
var ErrRemoved = errors.New("wire: watch removed before it was added")

// AddWatch registers w and sets it on the server: now on the current
// connection if it has a session, else on the next one. It returns once
// the watch is set (nil), the server refused it (the error code; w is then
// no longer registered), or ctx ends (ctx's error: call RemoveWatch). From
// then on, the layer sets w again on every new connection. A watch is
// added once: after RemoveWatch or Forget, AddWatch fails with ErrRemoved
// and sets nothing, whichever of them was called first.
func (l *Layer) AddWatch(ctx context.Context, w *Watch) (code int32, err error) {
	w.first = make(chan struct{})
	if !l.addOn(l.cur.Load(), w) {
		return 0, ErrRemoved
	}
	select {
	case <-w.first:
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.firstOK {
			return w.code, nil
		}
		return CodeOK, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// addOn registers w and, when c has a session, writes its addWatch on c.
// Both happen under c's write lock, so a RemoveWatch of w that unregisters
// it meanwhile writes its removeWatches behind that addWatch; false when w
// was unregistered already.
func (l *Layer) addOn(c *conn, w *Watch) bool {
	if c != nil {
		c.g.mu.Lock()
		defer c.g.mu.Unlock()
	}
	if !l.register(w) {
		return false
	}
	if c != nil {
		l.probeTypedLocked(c)
		if c.own.ready {
			mode := l.modeOn(c, w)
			var g *gap
			if _, rec := l.onPath(w.Path); rec && mode == modePersistent && c.own.typed.Load() == 0 {
				g = &gap{} // a 3.6 to 3.8 server would turn the path plain: set the recursive ones again behind
			}
			_ = l.writeAddLocked(c, w, mode, g)
			if g != nil {
				l.addAllLocked(c, []byte(w.Path), true, g)
			}
		}
	}
	return true
}

// onAdded is the reply handler of an addWatch of w in mode. With a gap
// not marked yet, it marks it; with one marked, a watch armed on the
// connection already is told of a change that may have been missed.
func (l *Layer) onAdded(w *Watch, mode int32, g *gap) func(*conn, Reply) {
	return func(c *conn, r Reply) {
		if r.Code == CodeOK {
			l.setRec(c, w.Path, mode)
		}
		missed := false
		if g != nil {
			if !g.set.Load() {
				g.mark(r.Zxid)
			} else {
				missed = g.changed(r.Zxid)
			}
		}
		w.mu.Lock()
		if r.Code != CodeOK {
			first := !w.firstOK
			if first {
				w.code = r.Code
			}
			w.mu.Unlock()
			l.unregistered(w)
			if first {
				closeOnce(w.first)
			} else if w.OnFail != nil {
				w.OnFail(r.Code)
			}
			return
		}
		if w.armedOn == c {
			sid := w.sid
			w.mu.Unlock()
			if missed && w.OnReset != nil {
				w.OnReset(sid, false) // set again after a gap in which something changed
			}
			return // set again behind a one-shot watch's frame: nothing new
		}
		sid := c.sessionID()
		w.armedOn = c
		first := !w.firstOK
		newSession := w.sid != sid
		w.sid, w.firstOK = sid, true
		w.mu.Unlock()
		if first {
			closeOnce(w.first)
		} else if w.OnReset != nil {
			w.OnReset(sid, newSession)
		}
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// RemoveWatch unregisters w and removes it from the server, unless
// another registered watch has its path and mode, or, on a server before
// 3.9, its path (the server watch stays and serves it), or w is not
// registered (never added, refused, or removed before): nothing is
// removed then. It waits for the reply
// until ctx ends. A connection without a session, or lost before the
// reply, holds no watch: that is success. A server that does not know the
// persistent watcher types of removeWatches (3.6 to 3.8 answer
// CodeMarshalling) is asked to remove the path's watches of every type
// (watcherAny) instead: the connection's one-shot watches on that very
// path go too (on those servers they were one watch with the persistent
// one anyway). It returns the server's error code for anything else.
func (l *Layer) RemoveWatch(ctx context.Context, w *Watch) (code int32, err error) {
	if shared, found := l.unregistered(w); shared || !found {
		return CodeOK, nil // another keeps it on the server, or it is not there
	}
	if c := l.cur.Load(); c != nil && c.own.typed.Load() == -1 {
		if others, _ := l.onPath(w.Path); others {
			return CodeOK, nil // the server watch serves the others: it stays (see above)
		}
	}
	typ := int32(watcherPersistent)
	if w.Recursive {
		typ = watcherPersistentRecursive
	}
	for {
		r, err := l.Call(ctx, OpRemoveWatches, removeBody(w.Path, typ))
		switch {
		case err == ErrConnLost:
			return CodeOK, nil // the watch went with the connection
		case err != nil:
			return 0, err
		case (r.Code == CodeOK || r.Code == CodeNoWatcher) && typ == watcherAny:
			counts.anyRemovals.Add(1)
			// Not cut short by ctx: the one-shot watches removed with it
			// must be set again, or go-zookeeper, whose connection stays,
			// would wait on them for good. A lost connection ends it.
			return l.putBack(context.WithoutCancel(ctx), w.Path, r.Zxid)
		case r.Code == CodeOK, r.Code == CodeNoWatcher:
			counts.typedRemovals.Add(1)
			return CodeOK, nil
		case r.Code == CodeMarshalling && typ != watcherAny:
			if others, _ := l.onPath(w.Path); others {
				return CodeOK, nil // the server watch serves the others: it stays (see above)
			}
			typ = watcherAny // a server before 3.9: see shots.go
		default:
			return r.Code, nil
		}
	}
}

// putBack sets again, after a removal of every watch on path whose reply
// carried zxid, go-zookeeper's one-shot watches there, and the other
// persistent watches registered on path (see shots.go).
func (l *Layer) putBack(ctx context.Context, path string, zxid int64) (int32, error) {
	if k := l.shots.kinds(path); k != 0 {
		r, err := l.Call(ctx, opSetWatches, setWatchesBody(zxid, path, k))
		switch {
		case err == ErrConnLost:
			return CodeOK, nil // go-zookeeper sets them again on the next connection
		case err != nil:
			return 0, err
		case r.Code != CodeOK:
			return r.Code, nil
		}
	}
	if c := l.cur.Load(); c != nil {
		c.g.mu.Lock()
		if c.own.ready {
			l.setRec(c, path, modePersistent) // the server holds none there now
			l.addAllLocked(c, []byte(path), false, gapAt(zxid))
		}
		c.g.mu.Unlock()
	}
	return CodeOK, nil
}

func removeBody(path string, typ int32) []byte {
	return addBody(path, typ) // path, int: the same record shape
}

// Forget unregisters w without asking the server (its connection is
// closing, or ends with the session). Unlike RemoveWatch, it may be called
// more than once.
func (l *Layer) Forget(w *Watch) {
	l.unregistered(w)
}

// onSession is called on the reading goroutine once a connection's
// handshake reply is read: if it granted a session, own requests may go
// over c from now on, and every registered watch is set on it.
func (c *conn) onSession() {
	if c.sessionID() == 0 || c.timeout() <= 0 {
		if c.layer != nil {
			c.layer.shots.expired() // go-zookeeper drops its watches (shots.go)
			c.layer.forgetZxid()    // and its last zxid (zxid.go)
		}
		return // expired: go-zookeeper reconnects
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.own.ready = true
	if c.layer != nil {
		c.layer.shots.newConnection() // the last one's requests set no watch (shots.go)
		if c.layer.watching() {
			c.layer.probeTypedLocked(c)
		}
		c.layer.addAllLocked(c, nil, false, nil)
	}
}

// addAllLocked writes an addWatch for every registered watch (on path
// only, when path is not nil; the recursive ones only, when recOnly) on c,
// with c.g.mu held, the plain ones first (see above), and returns how
// many it wrote. g, when not nil, is the gap the adds close.
func (l *Layer) addAllLocked(c *conn, path []byte, recOnly bool, g *gap) (n int64) {
	list := l.registered()
	for _, rec := range []bool{false, true} {
		if !rec && recOnly {
			continue
		}
		for _, w := range list {
			if w.Recursive != rec || path != nil && w.Path != string(path) {
				continue
			}
			if l.writeAddLocked(c, w, l.modeOn(c, w), g) == nil {
				n++
			}
		}
	}
	return n
}

// writeAddLocked writes an addWatch of w in mode on c (c.g.mu held). On a
// server that may keep one mode per path, a recursive one turns the
// path's child watch recursive too, which never fires NodeChildrenChanged:
// a one-shot child watch go-zookeeper holds there is set again right
// behind it, relative to the zxid it was set at (a change since fires it
// at once, as it would have).
func (l *Layer) writeAddLocked(c *conn, w *Watch, mode int32, g *gap) error {
	_, err := c.sendLocked(l.nextXid(), addWatchOp.Load(), addBody(w.Path, mode), l.onAdded(w, mode, g))
	if err == nil && mode == modePersistentRecursive && c.own.typed.Load() != 1 {
		if zxid, ok := l.shots.child(w.Path); ok {
			_, _ = c.sendLocked(l.nextXid(), opSetWatches, setWatchesBody(zxid, w.Path, shotChild), func(*conn, Reply) {})
		}
	}
	return err
}

// Opcodes of go-zookeeper's requests that may set a watch.
const (
	opExists       = 3
	opGetData      = 4
	opGetChildren  = 8
	opGetChildren2 = 12
)

// afterClientFrame is called, c.g.mu held, once a frame of go-zookeeper's
// is written (or gathered): behind one that sets a watch on the path of a
// persistent watch (or a SetWatches), the persistent watch is set again
// (see above).
//
// g, when not nil, is the gap the re-arms close (reArmGap).
func (l *Layer) afterClientFrame(c *conn, p []byte, g *gap) {
	if !l.watching() || len(p) < 12 || !c.own.ready {
		return
	}
	// A server that keeps a watch per mode on a path (3.9 and later) needs
	// none of this: the persistent watch stays what it is. Until the probe
	// has answered, the layer does as for an older server (harmless there).
	typed := c.own.typed.Load() == 1
	switch binary.BigEndian.Uint32(p[8:12]) {
	case opSetWatches:
		if typed {
			return
		}
		counts.reArms.Add(l.addAllLocked(c, nil, false, nil))
	case opGetChildren, opGetChildren2:
		if typed {
			return
		}
		// A child watch changes the path's child-watch mode only; while
		// the path's server watch is recursive, that one adds nothing to
		// the data-watch side, which stays recursive: re-arming would make
		// the child watch recursive, and go-zookeeper's NodeChildrenChanged
		// would never come.
		if path, ok := watchingPath(p); ok {
			if _, rec := l.onPath(string(path)); !rec {
				counts.reArms.Add(l.addAllLocked(c, path, false, g))
			}
		}
	case opExists, opGetData:
		if typed {
			return
		}
		if path, ok := watchingPath(p); ok {
			counts.reArms.Add(l.addAllLocked(c, path, false, g))
		}
	}
}

// reArmGap returns the gap a request frame of go-zookeeper's about to be
// written on c opens, or nil. A getData, exists or getChildren with the
// watch flag on the path of a persistent watch turns that path's server
// watch (its data or its child side) into a one-shot on a server that
// keeps one mode per path (3.6 to 3.8), until the re-arm behind it
// (afterClientFrame): a change it fires on deletes it, and a change below
// a recursive watch's path is not notified. The request's reply marks the
// gap with its zxid (shots.go), and a re-arm's reply with another zxid
// tells the watch's owner to read again (onAdded).
func (l *Layer) reArmGap(c *conn, p []byte) *gap {
	if !l.watching() || len(p) < 12 || !c.own.ready || c.own.typed.Load() == 1 {
		return nil
	}
	switch binary.BigEndian.Uint32(p[8:12]) {
	case opExists, opGetData, opGetChildren, opGetChildren2:
		if path, ok := watchingPath(p); ok {
			if found, _ := l.onPath(string(path)); found {
				return &gap{}
			}
		}
	}
	return nil
}

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
				w.OnEvent(Notification{Type: 4, Path: w.Path, Zxid: zxid}) // derived (see above)
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
// there (4), which w does not take (see above).
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

// probeTypedLocked asks c's server, once per connection and with c.g.mu
// held, whether it knows the persistent watcher types (ZOOKEEPER-4472, 3.9):
// a checkWatches of type watcherPersistent on "/" changes nothing; a server
// that knows the type answers whether the connection holds such a watch
// there (CodeOK or CodeNoWatcher), one before 3.9 answers CodeMarshalling.
// The same release keeps one watch per mode on a path (ZOOKEEPER-4466), so
// the answer also says whether persistent watches must be set again behind
// one-shot watches on their paths. Replies come in order: the answer is in
// before the reply of any addWatch written after the probe.
func (l *Layer) probeTypedLocked(c *conn) {
	const opCheckWatches = 17
	if c.own.probed || !c.own.ready {
		return
	}
	c.own.probed = true
	_, _ = c.sendLocked(l.nextXid(), opCheckWatches, addBody("/", watcherPersistent), func(c *conn, r Reply) {
		switch r.Code {
		case CodeOK, CodeNoWatcher:
			c.own.typed.Store(1)
		default:
			c.own.typed.Store(-1)
		}
	})
}

// counts are the process's counts of the persistent watches' requests by
// the way they went: tests read them (Counts) to tell which way ran
// against which server.
var counts struct {
	typedRemovals, anyRemovals, reArms atomic.Int64
	resumeFallbacks                    atomic.Int64
}

// Counts is a snapshot of the persistent watches' requests of every Layer
// of the process, by the way they went.
type Counts struct {
	// TypedRemovals: persistent watches removed by their watcher type
	// (servers 3.9 and later).
	TypedRemovals int64
	// AnyRemovals: persistent watches removed with every watch of the
	// connection on their path, then the others put back (servers 3.6 to
	// 3.8, which answer the typed removal with CodeMarshalling).
	AnyRemovals int64
	// ReArms: persistent watches set again behind a request of
	// go-zookeeper's that sets a watch on their path, or its SetWatches
	// (servers 3.6 to 3.8, and any server until the probe answered).
	ReArms int64
	// ResumeFallbacks: resumed connections whose replies waited for
	// go-zookeeper's SetWatches until the read deadline, then passed
	// (resume.go). Zero unless go-zookeeper never wrote a SetWatches the
	// layer expected.
	ResumeFallbacks int64
}

// ReadCounts returns the process's counts so far.
func ReadCounts() Counts {
	return Counts{
		TypedRemovals:   counts.typedRemovals.Load(),
		AnyRemovals:     counts.anyRemovals.Load(),
		ReArms:          counts.reArms.Load(),
		ResumeFallbacks: counts.resumeFallbacks.Load(),
	}
}
