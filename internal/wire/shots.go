package wire

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// Servers before 3.9 cannot remove a persistent watch alone
// (ZOOKEEPER-4472: they answer the persistent watcher types of
// removeWatches with CodeMarshalling) and keep one watch per connection
// and path (ZOOKEEPER-4466). So RemoveWatch falls back to removing every
// watch of the connection on the path, go-zookeeper's one-shot watches on
// that very path included, and puts those back at once with a SetWatches
// of its own. To know which, the layer follows go-zookeeper's one-shot
// watches on the paths of its persistent watches (and on those only):
//
//   - when a persistent watch's path is first registered, three requests
//     go out ahead of its addWatch: checkWatches of the data and children
//     types (does the connection hold such a watch there?) and an exists
//     (a data watch of go-zookeeper's is an exists watch when the node is
//     missing);
//   - from then on, go-zookeeper's requests that set a watch on the path
//     are noted as written and counted once their reply says the watch is
//     set, the way go-zookeeper counts them (getData or exists: data;
//     exists on a missing node: exist; getChildren: child);
//   - a notification on the path clears the kinds go-zookeeper fires on it,
//     and a new session clears them all, as go-zookeeper does.
//
// The SetWatches that puts them back carries the zxid of the removal's
// reply: every change up to it was notified to the connection (the
// persistent watch covered the path), and one after it fires the watch at
// once, as it would have.

// The kinds of go-zookeeper's one-shot watches.
const (
	shotData  = 1 << iota // getData, or exists on a node that exists
	shotExist             // exists on a missing node
	shotChild             // getChildren
)

// Opcodes and watcher types of the probes.
const (
	opCheckWatches = 17
	watcherChild   = 1
	watcherData    = 2
	codeNoNode     = -101
)

// shots follows go-zookeeper's one-shot watches on the paths of the
// persistent watches.
type shots struct {
	mu    sync.Mutex
	paths map[string]*shotPath
	pend  map[int32]pendShot // go-zookeeper's watching requests written, by xid
	npend atomic.Int32       // len(pend), read without the lock on every reply
	n     atomic.Int32       // len(paths), read without the lock on every notification
	sid   int64              // the session they were counted in
}

type shotPath struct {
	refs  int   // persistent watches registered on the path
	kinds uint8 // go-zookeeper's one-shot watches there
	data  bool  // the probe found a data or exists watch there
}

type pendShot struct {
	path string
	op   int32
}

// track starts following path (one more persistent watch on it), on c
// with c.g.mu held: the first time, the probes are written now.
func (l *Layer) track(c *conn, path string) {
	s := &l.shots
	s.mu.Lock()
	if s.paths == nil {
		s.paths = make(map[string]*shotPath)
	}
	sp := s.paths[path]
	first := sp == nil
	if first {
		sp = &shotPath{}
		s.paths[path] = sp
		s.n.Store(int32(len(s.paths)))
	}
	sp.refs++
	s.mu.Unlock()
	if !first || c == nil || !c.own.ready {
		return // without probes: go-zookeeper's earlier watches there are not known
	}
	_, _ = c.sendLocked(l.nextXid(), opCheckWatches, addBody(path, watcherData), func(_ *conn, r Reply) {
		l.probed(path, func(sp *shotPath) { sp.data = r.Code == CodeOK })
	})
	_, _ = c.sendLocked(l.nextXid(), opCheckWatches, addBody(path, watcherChild), func(_ *conn, r Reply) {
		l.probed(path, func(sp *shotPath) {
			if r.Code == CodeOK {
				sp.kinds |= shotChild
			}
		})
	})
	body := binary.BigEndian.AppendUint32(nil, uint32(len(path)))
	body = append(append(body, path...), 0) // exists, no watch
	_, _ = c.sendLocked(l.nextXid(), opExists, body, func(_ *conn, r Reply) {
		l.probed(path, func(sp *shotPath) {
			switch {
			case !sp.data:
			case r.Code == CodeOK:
				sp.kinds |= shotData
			case r.Code == codeNoNode:
				sp.kinds |= shotExist
			}
		})
	})
}

func (l *Layer) probed(path string, fn func(*shotPath)) {
	s := &l.shots
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.paths[path]; sp != nil {
		fn(sp)
	}
}

// untrack stops following path for one persistent watch, and returns
// go-zookeeper's one-shot watches there.
func (l *Layer) untrack(path string) uint8 {
	s := &l.shots
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.paths[path]
	if sp == nil {
		return 0
	}
	if sp.refs--; sp.refs <= 0 {
		delete(s.paths, path)
		s.n.Store(int32(len(s.paths)))
	}
	return sp.kinds
}

// kinds returns go-zookeeper's one-shot watches on path.
func (l *Layer) kinds(path string) uint8 {
	s := &l.shots
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.paths[path]; sp != nil {
		return sp.kinds
	}
	return 0
}

// wroteWatching notes go-zookeeper's request xid (op) that sets a watch on
// path, if a persistent watch is on path.
func (l *Layer) wroteWatching(xid, op int32, path []byte) {
	s := &l.shots
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paths[string(path)] == nil {
		return
	}
	if s.pend == nil {
		s.pend = make(map[int32]pendShot)
	}
	s.pend[xid] = pendShot{path: string(path), op: op}
	s.npend.Store(int32(len(s.pend)))
}

// replied counts the watch a reply (xid, error code) of go-zookeeper's
// sets, if it answers a request wroteWatching noted.
func (l *Layer) replied(xid, code int32) {
	s := &l.shots
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pend[xid]
	if !ok {
		return
	}
	delete(s.pend, xid)
	s.npend.Store(int32(len(s.pend)))
	sp := s.paths[p.path]
	if sp == nil {
		return
	}
	switch {
	case code == CodeOK && (p.op == opGetData || p.op == opExists):
		sp.kinds |= shotData
	case code == codeNoNode && p.op == opExists:
		sp.kinds |= shotExist
	case code == CodeOK:
		sp.kinds |= shotChild
	}
}

// fired clears the one-shot watches go-zookeeper fires on a notification
// of type typ on path.
func (l *Layer) fired(path string, typ int32) {
	s := &l.shots
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.paths[path]
	if sp == nil {
		return
	}
	switch typ {
	case 1: // NodeCreated
		sp.kinds &^= shotExist
	case 3: // NodeDataChanged
		sp.kinds &^= shotExist | shotData
	case 4: // NodeChildrenChanged
		sp.kinds &^= shotChild
	case 2: // NodeDeleted
		sp.kinds = 0
	}
}

// shotsOnSession forgets the requests noted on the last connection (go-zookeeper
// fails them), and every one-shot watch when the session is new.
func (l *Layer) shotsOnSession(sid int64) {
	s := &l.shots
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.pend)
	s.npend.Store(0)
	if sid != s.sid {
		for _, sp := range s.paths {
			sp.kinds = 0
		}
		s.sid = sid
	}
}

// setWatchesBody is a SetWatches request putting go-zookeeper's one-shot
// watches (kinds) on path back, relative to zxid.
func setWatchesBody(zxid int64, path string, kinds uint8) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(zxid))
	for _, k := range []uint8{shotData, shotExist, shotChild} {
		if kinds&k == 0 {
			b = binary.BigEndian.AppendUint32(b, 0)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
		b = append(b, path...)
	}
	return b
}
