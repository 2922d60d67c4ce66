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

// Notifier reports that the create request for a path has been written to
// a connection.
type Notifier struct {
	waiting atomic.Int32 // entries in paths; wrote skips the lock at 0
	mu      sync.Mutex
	paths   map[string]*Sent
}

// Sent is told when a create request is written.
type Sent struct {
	done chan struct{} // closed as the first frame of the create is written
	sid  int64         // the session of the connection it went over; set before done closes
}

// Done is closed as the first frame of the create is written.
func (s *Sent) Done() <-chan struct{} { return s.done }

// SessionID is the session of the connection the create went over. Read
// it only once Done is closed.
func (s *Sent) SessionID() int64 { return s.sid }

func newNotifier() *Notifier {
	return &Notifier{paths: make(map[string]*Sent)}
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
		close(sc.done)
		delete(n.paths, string(path))
		n.waiting.Add(-1)
	}
	n.mu.Unlock()
}
