package wire

import (
	"bufio"
	"encoding/binary"
	"slices"
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
// Both are gone at their root (zxid.go): go-zookeeper records no zxid of
// its own, and the layer writes the relativeZxid, from a base that moves
// only while go-zookeeper's watches are set on the server. The Java client
// also builds SetWatches before it reads any reply on the new connection,
// and a connection of the layer keeps that order: after the handshake of a
// resumed session, while go-zookeeper holds a one-shot watch (shots.go
// follows them), no reply is read until the SetWatches request has been
// written, except the replies to the credentials an authenticated client
// sends first (below). A client that holds no watch sends no SetWatches:
// its replies pass at once. A new session (the first connection, or one
// after an expiry) holds no watch to re-set.
//
// The hold has no timer of its own: go-zookeeper writes SetWatches as soon
// as its loop goroutine runs, which on a busy machine can be seconds after
// the handshake. Its only bound is a liveness fallback, shortly before the
// read deadline go-zookeeper set for the read that waits (two thirds of
// the session timeout): should go-zookeeper not have written SetWatches by
// then, the replies pass, and the fallback is counted
// (Counts.ResumeFallbacks) and reported (Layer.OnResumeFallback). Nothing
// is at stake but the order: the relativeZxid and the base do not depend
// on the hold (zxid.go).

// Opcodes of the requests a resumed connection starts with.
const (
	opSetAuth    = 100
	opSetWatches = 101
)

// An authenticated client first sends its credentials again, and sends
// nothing else, SetWatches included, until their replies are read. Those
// replies are let through (a server answers them with zxid 0, which
// go-zookeeper does not record); any other reply waits as above.

// resumer holds a resumed connection's replies back until the watches
// are re-set.
type resumer struct {
	asked    int64         // the session id the handshake asked to resume (0: a new session)
	reset    chan struct{} // closed when SetWatches is written; nil when not resuming
	resetOne sync.Once
	closed   chan struct{} // closed by Close; made with the connection
	closeOne sync.Once
	authed   chan struct{} // closed when the first SetAuth is written
	authOne  sync.Once
	mu       sync.Mutex
	auths    []int32 // xids of the SetAuth requests written

	// Read side only.
	state     int         // resumeUnknown, resumeHolding or resumeDone
	timer     *time.Timer // the liveness fallback of resumeHolding
	since     time.Time   // when the hold began
	off, size int         // the SetAuth reply being passed through: bytes passed, its length
}

const (
	resumeUnknown = iota // before the first read after the handshake
	resumeHolding        // replies wait for SetWatches
	resumeDone           // replies pass
)

// onHandshake notes the session id a ConnectRequest (length, protocolVersion,
// lastZxidSeen, timeOut, sessionId, password) asks to resume.
func (r *resumer) onHandshake(p []byte) {
	if len(p) >= 28 {
		r.asked = int64(binary.BigEndian.Uint64(p[20:28]))
	}
	if r.asked != 0 {
		r.reset = make(chan struct{})
		r.authed = make(chan struct{})
	}
}

// beforeFrame notes a request frame (length, xid, opcode, ...) about to be
// written: a SetAuth's xid, before its reply can come.
func (r *resumer) beforeFrame(p []byte) {
	if r.reset != nil && len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == opSetAuth {
		r.mu.Lock()
		r.auths = append(r.auths, int32(binary.BigEndian.Uint32(p[4:8])))
		r.mu.Unlock()
		r.authOne.Do(func() { close(r.authed) })
	}
}

// afterFrame notes a request frame written (or gathered): SetWatches, or
// go-zookeeper's close request. A client closed right after reconnecting
// never sends the SetWatches it built (its queue is shut), and its reading
// goroutine must read the close's reply (or the server's end of the
// connection) to end: the hold ends with the close request.
func (r *resumer) afterFrame(p []byte) {
	if r.reset != nil && (isSetWatches(p) || isClose(p)) {
		r.resetOne.Do(func() { close(r.reset) })
	}
}

// opClose is the opcode of go-zookeeper's close request.
const opClose = -11

// isClose reports whether a request frame is a close request.
func isClose(p []byte) bool {
	return len(p) >= 12 && int32(binary.BigEndian.Uint32(p[8:12])) == opClose
}

// isSetWatches reports whether a request frame (length, xid, opcode, ...)
// is a SetWatches.
func isSetWatches(p []byte) bool {
	return len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == opSetWatches
}

func (r *resumer) isAuth(xid int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.auths, xid)
}

// readResumed reads after the handshake while the state is not resumeDone.
// granted is the session id the server answered, timeout the session
// timeout.
func (c *conn) readResumed(p []byte, granted int64, timeout time.Duration) (int, error) {
	r := &c.resume
	if r.state == resumeUnknown {
		r.state = resumeDone
		if r.reset == nil || granted != r.asked || !c.owesWatches() {
			return c.readFrames(p)
		}
		r.state = resumeHolding
		r.since = time.Now()
		r.timer = time.NewTimer(c.readBound(timeout))
	}
	if r.off < r.size { // the rest of a SetAuth reply
		return r.pass(c.r, p)
	}
	select {
	case <-r.reset:
	case <-r.closed:
	case <-r.timer.C:
		c.fellBack()
	case <-r.authed:
		hdr, err := c.r.Peek(8) // length, xid
		for err == nil && isOwn(int32(binary.BigEndian.Uint32(hdr[4:8]))) {
			// The layer's own reply (own.go): not go-zookeeper's, taken out
			// now, lest the credentials' reply behind it wait for the bound.
			if err = c.takeOwn(4 + int(binary.BigEndian.Uint32(hdr[0:4]))); err == nil {
				hdr, err = c.r.Peek(8)
			}
		}
		if err != nil {
			r.done()
			return 0, err
		}
		if r.isAuth(int32(binary.BigEndian.Uint32(hdr[4:8]))) {
			r.off, r.size = 0, 4+int(binary.BigEndian.Uint32(hdr[0:4]))
			return r.pass(c.r, p)
		}
		select {
		case <-r.reset:
		case <-r.closed:
		case <-r.timer.C:
			c.fellBack()
		}
	}
	r.done()
	return c.readFrames(p)
}

// pass reads on within a SetAuth reply, not beyond it.
func (r *resumer) pass(br *bufio.Reader, p []byte) (int, error) {
	n, err := br.Read(p[:min(len(p), r.size-r.off)])
	r.off += n
	return n, err
}

func (r *resumer) done() {
	r.state = resumeDone
	r.timer.Stop()
}

// owesWatches notes, on a resumed connection, how many watches
// go-zookeeper holds and so will re-set (zxid.go), and reports whether
// there are any (without a layer, in tests: presumed so).
func (c *conn) owesWatches() bool {
	if c.layer == nil {
		return true
	}
	c.reset.owed = c.layer.shots.held()
	return c.reset.owed > 0
}

// readBound is the hold's liveness fallback: nine tenths of the time left
// until the read deadline go-zookeeper set for this read (or of two thirds
// of the session timeout, go-zookeeper's read timeout, when it set none),
// so that the read after it still finds the deadline ahead.
func (c *conn) readBound(timeout time.Duration) time.Duration {
	left := timeout * 2 / 3
	if d := c.rdeadline.Load(); d != 0 {
		left = max(time.Until(time.Unix(0, d)), 0)
	}
	return left * 9 / 10
}

// fellBack counts and reports a hold that ended on its fallback.
func (c *conn) fellBack() {
	counts.resumeFallbacks.Add(1)
	if c.layer != nil && c.layer.OnResumeFallback != nil {
		c.layer.OnResumeFallback(time.Since(c.resume.since))
	}
}

// SetReadDeadline records the read deadline go-zookeeper sets before
// each read (the hold's fallback), and sets it.
func (c *conn) SetReadDeadline(t time.Time) error {
	var d int64
	if !t.IsZero() {
		d = t.UnixNano()
	}
	c.rdeadline.Store(d)
	return c.Conn.SetReadDeadline(t)
}

// close releases a read that waits.
func (r *resumer) close() { r.closeOne.Do(func() { close(r.closed) }) }
