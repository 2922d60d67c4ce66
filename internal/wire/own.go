package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// The layer sends requests of its own on go-zookeeper's connection: the
// requests go-zookeeper has no call for (ZooKeeper 3.6's addWatch, and
// removeWatches). They share the connection, and so the session, with
// go-zookeeper's requests; go-zookeeper never sees them.
//
//   - Xids. go-zookeeper numbers its requests from 1 up, masked to 31
//     bits: never negative. The server echoes a request's xid in its reply
//     and gives a negative xid meaning only in the few it uses itself (-1
//     a notification, -2 a ping, -4 an auth reply, -8 the Java client's
//     SetWatches). The layer's xids are in [ownXidMin, ownXidMax], far from
//     both.
//   - Writing. Every write after the handshake goes through the gatherer's
//     lock (gather.go); an own frame is written whole under it, between two
//     of go-zookeeper's frames (or added to the frames being gathered), under
//     a write deadline of its own as flushLate's is. A failed or short write
//     closes the connection: the stream would be corrupt.
//   - Reading. go-zookeeper reads a frame in two reads (its length, then
//     the rest). The connection tracks frame boundaries (demux below): at
//     each boundary it peeks at the length and xid in its read buffer; an
//     own reply is taken out whole and handed to its waiter, anything else
//     passes through bounded to the frame, without a copy, untouched but
//     for the zxid of go-zookeeper's replies (zxid.go). So go-zookeeper's
//     replies, its pings and notifications are as they would be without
//     the layer.
//   - Loss. A request waits on its connection: when the connection closes
//     (go-zookeeper closes it on any read or write failure, and before every
//     reconnection), every request still waiting fails with ErrConnLost.
//     A request is never written on a connection whose handshake reply has
//     not been read, nor on one already closed.

// The xids of the layer's own requests.
const (
	ownXidMax = -0x40000000
	ownXidMin = ownXidMax - 0x0fffffff
)

func isOwn(xid int32) bool { return xid >= ownXidMin && xid <= ownXidMax }

// Opcodes and error codes of the layer's own requests.
const (
	OpRemoveWatches = 18
	OpAddWatch      = 106

	CodeOK            = 0
	CodeMarshalling   = -5 // what a 3.6-3.8 server answers a watcher type it does not know
	CodeUnimplemented = -6 // what a server answers an opcode it does not know (and it closes the connection)
	CodeNoWatcher     = -121
)

// ErrConnLost is the error of an own request whose connection was lost,
// or that found no connection to go over: it may or may not have reached
// the server.
var ErrConnLost = errors.New("wire: connection lost")

// Reply is the reply to an own request.
type Reply struct {
	Zxid int64  // the server's last zxid when it answered
	Code int32  // the error code: 0 (CodeOK) for success
	Body []byte // the reply's body after the header (empty unless Code is 0)
}

// pending is an own request waiting for its reply.
type pending struct {
	done    chan struct{}
	rep     Reply
	err     error
	onReply func(c *conn, r Reply) // called on the reading goroutine before done closes, if set
}

// ownState is a connection's side of the own requests.
type ownState struct {
	ready  bool // the handshake reply was read and granted a session; guarded by g.mu
	probed bool // the server's removal by type was probed (probe.go); guarded by g.mu
	// typed is the probe's answer, a serverWatchModes (probe.go).
	typed atomic.Int32

	mu      sync.Mutex
	dead    bool // closed: every request fails
	pending map[int32]*pending
	frame   []byte // an own reply larger than the read buffer (rare)
}

// demux is the read side's frame tracking (reading goroutine only).
type demux struct {
	left  int    // bytes of the frame passing through not yet read
	size  int    // its length, its length field included
	blank bool   // its zxid reaches go-zookeeper as 0 (zxid.go)
	tap   bool   // the frame passing through is a notification being copied
	tbuf  []byte // its bytes so far

	shot     bool  // it may set a one-shot watch of go-zookeeper's: counted once passed whole
	shotXid  int32 // its xid, error code and zxid
	shotCode int32
	shotZxid int64
}

// nextXid returns a fresh own xid.
func (l *Layer) nextXid() int32 {
	return ownXidMax - int32(l.xid.Add(1)&0x0fffffff)
}

// Call sends an own request (opcode op, body the request record after the
// header) on the current connection and waits for its reply. It fails with
// ErrConnLost when there is no connection with a session, or when it is
// lost before the reply; with ctx's error when ctx ends first (the reply,
// if any, is then dropped). It never hangs past the connection's loss.
func (l *Layer) Call(ctx context.Context, op int32, body []byte) (Reply, error) {
	c := l.cur.Load()
	if c == nil {
		return Reply{}, ErrConnLost
	}
	p, err := c.send(l.nextXid(), op, body, nil)
	if err != nil {
		return Reply{}, err
	}
	return p.wait(ctx, c)
}

// wait waits for p's reply on c.
func (p *pending) wait(ctx context.Context, c *conn) (Reply, error) {
	select {
	case <-p.done:
		return p.rep, p.err
	case <-ctx.Done():
		c.forget(p)
		return Reply{}, ctx.Err()
	}
}

// ownFrame encodes a request frame: length, xid, opcode, body.
func ownFrame(xid, op int32, body []byte) []byte {
	b := make([]byte, 12+len(body))
	binary.BigEndian.PutUint32(b[0:4], uint32(8+len(body)))
	binary.BigEndian.PutUint32(b[4:8], uint32(xid))
	binary.BigEndian.PutUint32(b[8:12], uint32(op))
	copy(b[12:], body)
	return b
}

// send writes an own request on c and registers its waiter.
func (c *conn) send(xid, op int32, body []byte, onReply func(*conn, Reply)) (*pending, error) {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	return c.sendLocked(xid, op, body, onReply)
}

// sendLocked is send with c.g.mu held.
func (c *conn) sendLocked(xid, op int32, body []byte, onReply func(*conn, Reply)) (*pending, error) {
	if !c.own.ready {
		return nil, ErrConnLost
	}
	p := &pending{done: make(chan struct{}), onReply: onReply}
	o := &c.own
	o.mu.Lock()
	if o.dead {
		o.mu.Unlock()
		return nil, ErrConnLost
	}
	if o.pending == nil {
		o.pending = make(map[int32]*pending)
	}
	o.pending[xid] = p
	o.mu.Unlock()
	if err := c.writeOwnLocked(ownFrame(xid, op, body)); err != nil {
		c.forget(p)
		return nil, ErrConnLost
	}
	return p, nil
}

// writeOwnLocked writes an own frame with c.g.mu held: added to the
// frames being gathered, or written now under a write deadline of its own
// (go-zookeeper's is restored after, as in flushLate). A failed write
// closes the connection.
func (c *conn) writeOwnLocked(b []byte) error {
	g := &c.g
	if g.want > 0 {
		g.buf = append(g.buf, b...)
		return nil
	}
	err := c.writeBoundedLocked(b)
	if err != nil {
		c.Conn.Close() // go-zookeeper's read fails and it reconnects
	}
	return err
}

// forget drops p from the waiting requests (its reply, if it comes, is
// dropped).
func (c *conn) forget(p *pending) {
	o := &c.own
	o.mu.Lock()
	for x, q := range o.pending {
		if q == p {
			delete(o.pending, x)
			break
		}
	}
	o.mu.Unlock()
}

// loseOwn fails every request waiting on c; c takes no more.
func (c *conn) loseOwn() {
	o := &c.own
	o.mu.Lock()
	o.dead = true
	ps := o.pending
	o.pending = nil
	o.mu.Unlock()
	for _, p := range ps {
		p.err = ErrConnLost
		close(p.done)
	}
}

// readFrames reads after the handshake once replies may pass: frame by
// frame, taking the own replies out.
func (c *conn) readFrames(p []byte) (int, error) {
	d := &c.dm
	for d.left == 0 {
		hdr, err := c.r.Peek(4) // length
		if err != nil {
			return 0, err
		}
		n := 4 + int(binary.BigEndian.Uint32(hdr[0:4]))
		xid := int32(0)
		if n >= 8 { // every reply has a header; peek at its xid
			if hdr, err = c.r.Peek(8); err != nil {
				return 0, err
			}
			xid = int32(binary.BigEndian.Uint32(hdr[4:8]))
		}
		if isOwn(xid) {
			if err := c.takeOwn(n); err != nil {
				return 0, err
			}
			continue
		}
		if xid > 0 && c.sent != nil && c.sent.awaits(xid) {
			// the reply to a create whose zxid is awaited (notice.go)
			b, err := c.r.Peek(min(n, c.r.Size()))
			if err != nil {
				return 0, err
			}
			c.sent.replied(b)
		}
		d.shot = false
		if xid > 0 && n >= 20 && c.layer != nil && c.layer.shots.npend.Load() > 0 {
			// a reply to a request of go-zookeeper's that may set a
			// one-shot watch (shots.go): counted once it has passed whole,
			// as go-zookeeper counts it (a reply cut short by a lost
			// connection sets no watch)
			if hdr, err = c.r.Peek(20); err != nil {
				return 0, err
			}
			d.shot, d.shotXid = true, xid
			d.shotCode, d.shotZxid = int32(binary.BigEndian.Uint32(hdr[16:20])), int64(binary.BigEndian.Uint64(hdr[8:16]))
		}
		d.left, d.size = n, n
		d.blank = false
		if passesZxid(xid) && n >= zxidAt+8 && c.layer != nil {
			// go-zookeeper gets it with a zxid of 0 (zxid.go)
			if hdr, err = c.r.Peek(min(n, zxidAt+12)); err != nil {
				return 0, err
			}
			c.recordZxid(hdr)
			d.blank = true
		}
		d.tap = xid == -1 && c.layer != nil && c.layer.tapping()
		d.tbuf = d.tbuf[:0]
	}
	k, err := c.r.Read(p[:min(len(p), d.left)])
	if d.blank {
		blankZxid(p[:k], d.size-d.left)
	}
	d.left -= k
	if d.shot && d.left == 0 {
		d.shot = false
		c.layer.shots.repliedAt(d.shotXid, d.shotCode, d.shotZxid)
	}
	if d.tap {
		d.tbuf = append(d.tbuf, p[:k]...)
		if d.left == 0 {
			d.tap = false
			c.layer.notified(c, d.tbuf)
		}
	}
	return k, err
}

// takeOwn reads the own reply frame of n bytes (length included) at the
// head of the read buffer and hands it to its waiter.
func (c *conn) takeOwn(n int) error {
	var b []byte
	if n <= c.r.Size() {
		var err error
		if b, err = c.r.Peek(n); err != nil {
			return err
		}
	} else { // larger than the buffer: copy it out
		if cap(c.own.frame) < n {
			c.own.frame = make([]byte, n)
		}
		b = c.own.frame[:n]
		if _, err := io.ReadFull(c.r, b); err != nil {
			return err
		}
		n = 0 // read already
	}
	if len(b) >= 20 {
		xid := int32(binary.BigEndian.Uint32(b[4:8]))
		r := Reply{Zxid: int64(binary.BigEndian.Uint64(b[8:16])), Code: int32(binary.BigEndian.Uint32(b[16:20]))}
		o := &c.own
		o.mu.Lock()
		p := o.pending[xid]
		delete(o.pending, xid)
		o.mu.Unlock()
		if p != nil {
			r.Body = append([]byte(nil), b[20:]...)
			if p.onReply != nil {
				p.onReply(c, r)
			}
			p.rep = r
			close(p.done)
		}
	}
	if n > 0 {
		_, err := c.r.Discard(n)
		return err
	}
	return nil
}
