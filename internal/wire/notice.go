package wire

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// A queue's first listing need not wait for the reply to its create:
// ZooKeeper executes one session's requests in the order they arrive, so a
// getChildren sent after the create reaches the wire lists the children as
// the create left them. go-zookeeper's calls block until their reply and
// queue their requests from whichever goroutine gets there first, so the
// connection tells when a create's frame is being written (Notifier), and
// the recipe queues the listing on another goroutine only then:
// go-zookeeper's one writing goroutine writes it after the create's frame.

//
// The connection also reads the reply to that create (replied): a reply's
// header carries the server's last zxid when it answered, and a server
// applies writes one at a time and answers each right after applying it,
// so a successful create's reply carries the zxid of that create, the new
// node's czxid. go-zookeeper has no create2 and drops that zxid; the
// recipes take it from here instead of reading the node.

// Notifier reports that the create request for a path has been written to
// a connection, and what its reply said.
type Notifier struct {
	waiting  atomic.Int32 // entries in paths; wrote skips the lock at 0
	awaiting atomic.Int32 // entries in replies; replied is skipped at 0
	mu       sync.Mutex
	paths    map[string]*Sent
	replies  map[int32]*Sent // by the xid of the create frame written
}

// Sent is told when a create request is written, and of its reply.
// Its fields are written under the Notifier's lock while it waits there;
// read Created only after calling the forget function expect returned.
type Sent struct {
	done chan struct{} // closed as the first frame of the create is written
	sid  int64         // the session of the connection it went over; set before done closes
	xid  int32         // the create frame's xid
	zxid int64         // the zxid of its successful reply, 0 until one is read
	path string        // the path that reply names
}

// Created returns the zxid of the successful reply to the create and the
// path it names, or 0 and "" when no such reply was read (the create
// failed, was written again after a connection loss, or its reply was not
// read through the layer). That zxid is the created node's czxid. Call it
// only after the forget function of expect.
func (s *Sent) Created() (zxid int64, path string) { return s.zxid, s.path }

// Done is closed as the first frame of the create is written.
func (s *Sent) Done() <-chan struct{} { return s.done }

// SessionID is the session of the connection the create went over. Read
// it only once Done is closed.
func (s *Sent) SessionID() int64 { return s.sid }

func newNotifier() *Notifier {
	return &Notifier{paths: make(map[string]*Sent), replies: make(map[int32]*Sent)}
}

// expect returns what is told once a create request for path is written,
// and a function that forgets path (call it once the create is over,
// whether or not done closed).
func (n *Notifier) expect(path string) (*Sent, func()) {
	sc := &Sent{done: make(chan struct{})}
	n.mu.Lock()
	n.paths[path] = sc
	n.waiting.Add(1)
	n.mu.Unlock()
	return sc, func() {
		n.mu.Lock()
		if c, ok := n.paths[path]; ok && c == sc {
			delete(n.paths, path)
			n.waiting.Add(-1)
		}
		if c, ok := n.replies[sc.xid]; ok && c == sc {
			delete(n.replies, sc.xid)
			n.awaiting.Add(-1)
		}
		n.mu.Unlock()
	}
}

// The opcodes of the requests that create a node: create, create2,
// createContainer, createTTL.
const (
	opCreate          = 1
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
)

// wrote is told of every request frame as it is written to a connection
// of session sid after the handshake: length, xid, opcode, then (for a
// create) the path.
func (n *Notifier) wrote(frame []byte, sid int64) {
	if n.waiting.Load() == 0 || len(frame) < 16 {
		return
	}
	switch binary.BigEndian.Uint32(frame[8:12]) {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
	default:
		return
	}
	l := int(int32(binary.BigEndian.Uint32(frame[12:16])))
	if l < 0 || l > len(frame)-16 {
		return
	}
	path := frame[16 : 16+l]
	n.mu.Lock()
	if sc, ok := n.paths[string(path)]; ok {
		sc.sid = sid
		sc.xid = int32(binary.BigEndian.Uint32(frame[4:8]))
		close(sc.done)
		delete(n.paths, string(path))
		n.waiting.Add(-1)
		if sc.xid > 0 { // go-zookeeper's xids are positive
			n.replies[sc.xid] = sc
			n.awaiting.Add(1)
		}
	}
	n.mu.Unlock()
}

// awaits reports whether the reply of xid is that of a create awaited.
func (n *Notifier) awaits(xid int32) bool {
	if n.awaiting.Load() == 0 {
		return false
	}
	n.mu.Lock()
	_, ok := n.replies[xid]
	n.mu.Unlock()
	return ok
}

// replied is told of the reply frame of a create awaited (awaits):
// frame is the whole frame (length, xid, zxid, err, then for a create the
// path), or as much of it as the read buffer holds. The reply to a create
// written on a connection of session sid comes on one of that session
// (xids are never reused within a client).
func (n *Notifier) replied(frame []byte) {
	if len(frame) < 20 {
		return
	}
	xid := int32(binary.BigEndian.Uint32(frame[4:8]))
	n.mu.Lock()
	defer n.mu.Unlock()
	sc, ok := n.replies[xid]
	if !ok {
		return
	}
	delete(n.replies, xid)
	n.awaiting.Add(-1)
	if binary.BigEndian.Uint32(frame[16:20]) != 0 || len(frame) < 24 {
		return // failed, or cut short: unknown
	}
	l := int(int32(binary.BigEndian.Uint32(frame[20:24])))
	if l < 0 || l > len(frame)-24 {
		return
	}
	sc.path = string(frame[24 : 24+l])
	sc.zxid = int64(binary.BigEndian.Uint64(frame[8:16]))
}
