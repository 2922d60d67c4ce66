package zkrecipes

import (
	"encoding/binary"
	"sync"
	"time"
)

// When go-zookeeper resumes a session on a new connection, it re-sets the
// watches it holds with a SetWatches request whose relativeZxid is the
// last zxid it has seen: the server then fires every watch whose node
// changed after that zxid. go-zookeeper builds that request on one
// goroutine while another already reads the new connection's replies and
// records each reply's zxid as the last seen (go-zookeeper/zk#35, open
// since 2020). Two things follow:
//
//   - a data race on that field, which the race detector reports whenever
//     a request queued while the connection was down is answered before
//     SetWatches is built; and
//   - a notification can be lost: if a reply's zxid, newer than a change
//     made while the client was cut off, becomes the relativeZxid, the
//     server does not fire the watch on that change. (A deleted node is
//     reported whatever the zxid, so a lock waiter's watch on the node
//     ahead is safe; a child or data watch is not.)
//
// The Java client builds SetWatches before it reads any reply on the new
// connection. A Session's connection does the same for go-zookeeper: after
// the handshake of a resumed session, its first read waits until the
// SetWatches request has been written (go-zookeeper builds it, reading the
// last zxid, before it writes it, so every reply is then recorded after).
// A client that holds no watch sends no SetWatches and reads no zxid; its
// first read waits resumeWait at most (a sixth of the session timeout when
// that is less: go-zookeeper's read deadline is two thirds of it), then
// goes on. A new session (the first connection, or one after an expiry)
// holds no watch to re-set.

// resumeWait is the longest a resumed connection's first read waits for the
// SetWatches request: go-zookeeper writes it within microseconds when it
// holds watches, and sends none when it holds none. It only has to outlast
// go-zookeeper finding its watch list empty, microseconds after the
// handshake; a client without watches pays it once per reconnection.
var resumeWait = 200 * time.Millisecond // a var for tests only

// opSetWatches is the opcode of ZooKeeper's SetWatches request.
const opSetWatches = 101

// resumer holds a resumed connection's replies back until the watches
// are re-set.
type resumer struct {
	asked    int64         // the session id the handshake asked to resume (0: a new session)
	reset    chan struct{} // closed when SetWatches is written; nil when not resuming
	once     sync.Once
	closed   chan struct{} // closed by Close; made with the connection
	waited   bool          // the first reply read has waited (read side only)
	closeOne sync.Once
}

// onHandshake notes the session id a ConnectRequest (length, protocolVersion,
// lastZxidSeen, timeOut, sessionId, password) asks to resume.
func (r *resumer) onHandshake(p []byte) {
	if len(p) >= 28 {
		r.asked = int64(binary.BigEndian.Uint64(p[20:28]))
	}
	if r.asked != 0 {
		r.reset = make(chan struct{})
	}
}

// onFrame notes a request frame (length, xid, opcode, ...) being written.
func (r *resumer) onFrame(p []byte) {
	if r.reset != nil && len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == opSetWatches {
		r.once.Do(func() { close(r.reset) })
	}
}

// awaitReset is called before every read that follows the handshake: the
// first waits, if the session was resumed (granted is the session id the
// server answered, timeout the session timeout), until SetWatches is
// written, the connection is closed or the bound above has passed.
func (r *resumer) awaitReset(granted int64, timeout time.Duration) {
	if r.waited {
		return
	}
	r.waited = true
	if r.reset == nil || granted != r.asked {
		return
	}
	t := time.NewTimer(min(resumeWait, timeout/6))
	defer t.Stop()
	select {
	case <-r.reset:
	case <-r.closed:
	case <-t.C:
	}
}

// close releases a read that waits.
func (r *resumer) close() { r.closeOne.Do(func() { close(r.closed) }) }
