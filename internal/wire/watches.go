package wire

import (
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
// What a watch is told is events.go's. Servers 3.6 to 3.8 keep one watch
// mode per connection and path (ZOOKEEPER-4466): the layer sets a watch
// again behind go-zookeeper's one-shot watches on its path (rearm.go),
// and serves several watches on one path with one server watch
// (sharedpath.go); probe.go tells those servers from later ones.
//
// A resumed connection's replies, the layer's own among them, and the
// notifications behind them, wait for go-zookeeper's SetWatches as
// resume.go says (so OnReset still comes first); the zxid that SetWatches
// carries is zxid.go's.

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
	mu  sync.Mutex
	rec recPaths // where the server watch is recursive (sharedpath.go)
}

func (l *Layer) watching() bool {
	p := l.wlist.Load()
	return p != nil && len(*p) > 0
}

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
			if _, rec := l.onPath(w.Path); rec && mode == modePersistent && !c.watchModes().known() {
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
	if c := l.cur.Load(); c != nil && c.watchModes().perPath() {
		if others, _ := l.onPath(w.Path); others {
			return CodeOK, nil // the server watch serves the others: it stays (sharedpath.go)
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
				return CodeOK, nil // the server watch serves the others: it stays (sharedpath.go)
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
// with c.g.mu held, the plain ones first (sharedpath.go), and returns how
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
	if err == nil && mode == modePersistentRecursive && !c.watchModes().typed() {
		if zxid, ok := l.shots.child(w.Path); ok {
			_, _ = c.sendLocked(l.nextXid(), opSetWatches, setWatchesBody(zxid, w.Path, shotChild), func(*conn, Reply) {})
		}
	}
	return err
}
