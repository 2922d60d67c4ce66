package wire

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Servers before 3.9 cannot remove a persistent watch alone
// (ZOOKEEPER-4472: they answer the persistent watcher types of
// removeWatches with CodeMarshalling) and keep one watch per connection
// and path (ZOOKEEPER-4466). So RemoveWatch falls back to removing every
// watch of the connection on the path, go-zookeeper's one-shot watches on
// that very path included, and puts those back at once with a SetWatches
// of its own. To know which, the layer follows every one-shot watch
// go-zookeeper sets, on every path, from the connection's start; a probe
// cannot tell them (those servers answer checkWatches "set" when any
// session watches the path). It follows them as the server keeps them:
//
//   - a getData, exists or getChildren(2) request with the watch flag is
//     noted as it is written (before: its reply may be read before the
//     writing goroutine runs again), and the watch counted once its reply
//     says it is set: getData or exists answered OK, a data watch;
//     exists answered NONODE, an exist watch; getChildren OK, a child
//     watch. No other answer sets one. A request without the watch flag
//     costs an opcode test and no allocation;
//   - a notification clears what it fires: NodeCreated the exist watch,
//     NodeDataChanged the data and exist watches, NodeChildrenChanged the
//     child watch, NodeDeleted all three (the server's rule, and
//     go-zookeeper's);
//   - a new connection fails the requests still unanswered (go-zookeeper
//     fails them: they set no watch), and the watches go-zookeeper holds
//     stay followed: on a resumed session its SetWatches sets them again
//     (a watch whose node changed meanwhile fires at once, and its
//     notification clears it as above), and until then they are what its
//     SetWatches will carry, which the resume hold (resume.go) needs to
//     know. A handshake that finds the session expired clears them all:
//     go-zookeeper drops its watches then, and a new session holds none.
//
// The SetWatches that puts them back carries the zxid of the removal's
// reply: every change up to it was notified to the connection (the
// persistent watch covered the path), and one after it fires the watch at
// once, as it would have.

// The kinds of go-zookeeper's one-shot watches.
const (
	shotData  uint8 = 1 << iota // getData, or exists on a node that exists
	shotExist                   // exists on a missing node
	shotChild                   // getChildren
)

const codeNoNode = -101

// shots follows go-zookeeper's one-shot watches on the current
// connection.
type shots struct {
	mu    sync.Mutex
	paths map[string]*shotPath // paths with a watch set or asked for
	pend  map[int32]pendShot   // go-zookeeper's watching requests written, by xid
	npend atomic.Int32         // len(pend), read without the lock on every reply
	n     atomic.Int32         // len(paths), read without the lock on every notification
}

type shotPath struct {
	path    string
	kinds   uint8 // go-zookeeper's one-shot watches there
	pending int   // watching requests on the path not answered yet
	// childZxid: the zxid the child watch was set at (its reply's, or the
	// SetWatches' relative zxid), for setting it again (watches.go).
	childZxid int64
	pendChild int // getChildren requests with the watch flag not answered yet
}

type pendShot struct {
	sp *shotPath
	op int32
	g  *gap // marked with the reply's zxid, when not nil (rearm.go)
}

// wrote notes a request frame of go-zookeeper's (length, xid, opcode,
// request) about to be written: a watching request, or a SetWatches. The
// reply to a watching request marks g, when not nil, with its zxid.
func (s *shots) wrote(p []byte, g *gap) {
	if len(p) < 12 {
		return
	}
	switch op := int32(binary.BigEndian.Uint32(p[8:12])); op {
	case opExists, opGetData, opGetChildren, opGetChildren2:
		if path, ok := watchingPath(p); ok {
			s.asked(int32(binary.BigEndian.Uint32(p[4:8])), op, path, g)
		}
	case opSetWatches:
		s.setWatches(p[12:])
	}
}

// watchingPath returns the path of a getData, exists or getChildren(2)
// frame that has the watch flag set: path (int length, bytes), then the
// flag, the last byte.
func watchingPath(p []byte) ([]byte, bool) {
	if len(p) < 17 || p[len(p)-1] != 1 {
		return nil, false
	}
	n := int(int32(binary.BigEndian.Uint32(p[12:16])))
	if n < 0 || 16+n+1 != len(p) {
		return nil, false
	}
	return p[16 : 16+n], true
}

// asked notes go-zookeeper's request xid (op) that sets a watch on path
// once answered.
func (s *shots) asked(xid, op int32, path []byte, g *gap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.at(path)
	sp.pending++
	if op == opGetChildren || op == opGetChildren2 {
		sp.pendChild++
	}
	if s.pend == nil {
		s.pend = make(map[int32]pendShot)
	}
	s.pend[xid] = pendShot{sp: sp, op: op, g: g}
	s.npend.Store(int32(len(s.pend)))
}

// at returns path's entry, made if missing (s.mu held).
func (s *shots) at(path []byte) *shotPath {
	if sp := s.paths[string(path)]; sp != nil {
		return sp
	}
	if s.paths == nil {
		s.paths = make(map[string]*shotPath)
	}
	sp := &shotPath{path: string(path)}
	s.paths[sp.path] = sp
	s.n.Store(int32(len(s.paths)))
	return sp
}

// drop forgets sp once it holds nothing (s.mu held).
func (s *shots) drop(sp *shotPath) {
	if sp.kinds == 0 && sp.pending == 0 && s.paths[sp.path] == sp {
		delete(s.paths, sp.path)
		s.n.Store(int32(len(s.paths)))
	}
}

// repliedAt counts the watch a reply (xid, error code, zxid) of
// go-zookeeper's sets, if it answers a request asked noted.
func (s *shots) repliedAt(xid, code int32, zxid int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pend[xid]
	if !ok {
		return
	}
	delete(s.pend, xid)
	s.npend.Store(int32(len(s.pend)))
	if p.g != nil {
		p.g.mark(zxid)
	}
	sp := p.sp
	sp.pending--
	if p.op == opGetChildren || p.op == opGetChildren2 {
		sp.pendChild--
	}
	switch {
	case code == CodeOK && (p.op == opGetData || p.op == opExists):
		sp.kinds |= shotData
	case code == codeNoNode && p.op == opExists:
		sp.kinds |= shotExist
	case code == CodeOK && (p.op == opGetChildren || p.op == opGetChildren2):
		sp.kinds |= shotChild
		sp.childZxid = zxid
	}
	s.drop(sp)
}

// fired clears the one-shot watches a notification of type typ on path
// fires.
func (s *shots) fired(path []byte, typ int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.paths[string(path)]
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
	s.drop(sp)
}

// newConnection forgets the requests written on the last connection:
// go-zookeeper fails them, and they set no watch. The watches it holds
// stay (see above).
func (s *shots) newConnection() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.pend)
	s.npend.Store(0)
	for _, sp := range s.paths {
		sp.pending, sp.pendChild = 0, 0
		s.drop(sp)
	}
}

// expired forgets everything: go-zookeeper drops its watches when it
// learns that its session expired.
func (s *shots) expired() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.pend)
	s.npend.Store(0)
	clear(s.paths)
	s.n.Store(0)
}

// held returns how many one-shot watches go-zookeeper holds (one a path
// and kind): as many as its SetWatches will carry on a resumed session.
func (s *shots) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sp := range s.paths {
		n += bits.OnesCount8(sp.kinds)
	}
	return n
}

// setWatches counts the watches of go-zookeeper's SetWatches request
// (relativeZxid, then the data, exist and child watches' paths).
func (s *shots) setWatches(b []byte) {
	if len(b) < 8 {
		return
	}
	rel := int64(binary.BigEndian.Uint64(b))
	s.mu.Lock()
	defer s.mu.Unlock()
	eachSetWatch(b[8:], func(k uint8, path []byte) {
		sp := s.at(path)
		sp.kinds |= k
		if k == shotChild {
			sp.childZxid = rel
		}
	})
}

// eachSetWatch calls fn with every watch of a SetWatches request's lists
// (the data, exist and child watches' paths, after the relativeZxid) and
// returns how many there were.
func eachSetWatch(b []byte, fn func(kind uint8, path []byte)) int {
	n := 0
	for _, k := range []uint8{shotData, shotExist, shotChild} {
		if len(b) < 4 {
			return n
		}
		count := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		for range max(count, 0) {
			if len(b) < 4 {
				return n
			}
			m := int(int32(binary.BigEndian.Uint32(b)))
			if m < 0 || 4+m > len(b) {
				return n
			}
			if fn != nil {
				fn(k, b[4:4+m])
			}
			n++
			b = b[4+m:]
		}
	}
	return n
}

// kinds returns go-zookeeper's one-shot watches on path.
func (s *shots) kinds(path string) uint8 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.paths[path]; sp != nil {
		return sp.kinds
	}
	return 0
}

// child returns the zxid go-zookeeper's one-shot child watch on path was
// set at, if it holds one; 0 (a change since then is unknown: fire at
// once) when one is asked for and not answered yet.
func (s *shots) child(path string) (zxid int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.paths[path]
	switch {
	case sp == nil:
		return 0, false
	case sp.pendChild > 0:
		return 0, true
	case sp.kinds&shotChild != 0:
		return sp.childZxid, true
	}
	return 0, false
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
