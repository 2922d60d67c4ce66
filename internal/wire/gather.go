package wire

import (
	"sync"
	"time"
)

// A waiter sends several requests at once: its own node's read and the
// watches on the node ahead of it. go-zookeeper writes every request in a
// system call of its own, and on loopback or a LAN each such write, with
// the segment it makes the server receive, costs about as much CPU as the
// recipe's own work for that request. So the recipe asks the connection
// (Layer.Gather) to gather the next n request frames and write them in one.
//
// Gathering never reorders: every frame goes through one lock, in the
// order go-zookeeper writes them. A frame is held at most GatherWait: if
// fewer frames come than were announced (a request failed before it was
// written, or another goroutine's frame took a place), what was gathered
// is written then. A frame gathered but not yet written is, to
// go-zookeeper, on the wire: if the write fails, the connection is closed
// and its requests fail as a lost connection's do.

// GatherWait is the longest a gathered frame waits for the rest. A var for
// tests only.
var GatherWait = 250 * time.Microsecond

// gatherer is a connection's gathering state.
type gatherer struct {
	mu    sync.Mutex // held around every write after the handshake
	want  int        // frames still to gather
	buf   []byte     // frames gathered
	timer *time.Timer
}

// gather makes the next n request frames go out together.
func (c *conn) gather(n int) {
	g := &c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.want == 0 {
		if g.timer == nil {
			g.timer = time.AfterFunc(GatherWait, c.flushLate)
		} else {
			g.timer.Reset(GatherWait)
		}
	}
	g.want += n
}

// writeFrame writes one request frame, or gathers it.
func (c *conn) writeFrame(p []byte) (int, error) {
	g := &c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	c.resume.beforeFrame(p)
	defer c.resume.afterFrame(p) // once written (or gathered)
	if c.layer != nil && isSetWatches(p) {
		p = c.setWatchesFrame(p) // go-zookeeper's relativeZxid is 0 (zxid.go)
	}
	if c.layer != nil {
		// Noted before the write: its reply may be read before this
		// goroutine runs again (shots.go).
		r := c.layer.reArmFor(c, p)
		c.layer.shots.wrote(p, r.gap)
		defer c.layer.reArmed(c, r) // runs before afterFrame
	}
	if g.want == 0 {
		// Told before the write, not after: the reply may come back, and the
		// create's caller stop waiting for the notice, before this goroutine
		// runs again. A request queued on the notice still goes out after
		// this frame: go-zookeeper writes from one goroutine, which is here.
		if c.sent != nil {
			c.sent.wrote(p, c.sessionID())
		}
		return c.Conn.Write(p)
	}
	g.buf = append(g.buf, p...)
	g.want--
	if c.sent != nil {
		c.sent.wrote(p, c.sessionID()) // it goes out before any frame written after it
	}
	if g.want > 0 {
		return len(p), nil
	}
	g.timer.Stop()
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flushLocked writes what was gathered and stops gathering.
func (c *conn) flushLocked() error {
	g := &c.g
	b := g.buf
	g.buf, g.want = g.buf[:0], 0
	if len(b) == 0 {
		return nil
	}
	_, err := c.Conn.Write(b)
	return err
}

// Close closes the connection, then drops what was gathered: closing
// first ends a write that a stalled server holds up, which holds the lock.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.resume.close()
	c.loseOwn()
	c.g.mu.Lock()
	if c.g.timer != nil {
		c.g.timer.Stop()
	}
	c.g.buf, c.g.want = nil, 0
	c.g.mu.Unlock()
	return err
}

// flushLate writes the frames that waited GatherWait for the rest. When
// that fails, the connection is closed: go-zookeeper's read fails and it
// reconnects, failing the requests as lost.
//
// go-zookeeper bounds each of its writes with a write deadline (its
// recvTimeout, two thirds of the granted session timeout, set before the
// write and cleared after); this write, on the timer's goroutine, sets the
// same bound, then restores the deadline go-zookeeper set last.
func (c *conn) flushLate() {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if len(c.g.buf) == 0 {
		c.g.want = 0
		return
	}
	b := c.g.buf
	c.g.buf, c.g.want = c.g.buf[:0], 0
	err := c.writeBoundedLocked(b)
	if err != nil {
		c.Conn.Close()
	}
}

// SetWriteDeadline records the deadline go-zookeeper sets around its
// writes, and sets it unless flushLate's own is in force (flushLate
// restores it).
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.deadline = t
	if c.flushing {
		return nil
	}
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline sets both deadlines through their records.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// writeBoundedLocked writes b, with c.g.mu held, off go-zookeeper's send
// loop: under go-zookeeper's own bound on a write (its recvTimeout, two
// thirds of the session timeout, known once the handshake is read), then
// gives back the write deadline go-zookeeper set last.
func (c *conn) writeBoundedLocked(b []byte) error {
	d := c.timeout() * 2 / 3
	c.dmu.Lock()
	c.flushing = true
	_ = c.Conn.SetWriteDeadline(time.Now().Add(d))
	c.dmu.Unlock()
	_, err := c.Conn.Write(b)
	c.dmu.Lock()
	c.flushing = false
	_ = c.Conn.SetWriteDeadline(c.deadline)
	c.dmu.Unlock()
	return err
}
