package wire

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// go-zookeeper keeps the session timeout the server granted to itself, yet
// the Session needs it: a client cut off for that long must presume its
// session expired, and a server may grant less than was asked for. So the
// layer reads it off the wire: the first frame a server sends on a
// connection is the ConnectResponse (length, protocolVersion, timeOut,
// sessionId, password).
//
// Every connection also reads through a buffer: go-zookeeper reads every
// frame in two reads (its length, then its body), one system call each on
// a raw connection, whereas a buffered one takes the frames that arrived
// together (a reply and the notifications of its transaction) in one. A
// read deadline still applies whenever the buffer is empty.

// readBuffer is the read buffer of a connection.
const readBuffer = 16 << 10

// conn passes every byte through, reading the timeOut and sessionId
// fields of the first frame on the way; after the handshake, every request
// frame written goes through writeFrame (gather.go).
type conn struct {
	net.Conn
	r       *bufio.Reader
	granted *atomic.Int64
	head    [20]byte // length, protocolVersion, timeOut, sessionId
	n       int      // bytes read so far, up to the end of the handshake's reply
	sent    *Notifier
	shook   bool // the handshake has been written
	g       gatherer
	resume  resumer
	layer   *Layer   // nil in some unit tests
	own     ownState // own requests (own.go)
	dm      demux    // frame tracking on the read side (own.go)

	rdeadline atomic.Int64 // the read deadline go-zookeeper set last, in Unix ns (0: none)
	reset     resetState   // the re-set base (zxid.go)

	dmu      sync.Mutex // guards the write deadline (see flushLate)
	deadline time.Time  // the write deadline go-zookeeper set last
	flushing bool       // flushLate's own deadline is in force
}

func newConn(c net.Conn, granted *atomic.Int64, sent *Notifier) *conn {
	wc := &conn{Conn: c, r: bufio.NewReaderSize(c, readBuffer), granted: granted, sent: sent}
	wc.resume.closed = make(chan struct{})
	return wc
}

func (c *conn) Write(p []byte) (int, error) {
	if c.shook {
		return c.writeFrame(p)
	}
	c.resume.onHandshake(p)
	frame := p
	if c.layer != nil {
		frame = c.handshakeFrame(p) // go-zookeeper's own last zxid stays 0 (zxid.go)
	}
	n, err := c.Conn.Write(frame)
	c.shook = err == nil
	return n, err
}

func (c *conn) Read(p []byte) (int, error) {
	if c.n >= 4 && c.n >= c.handshakeLen() {
		if c.resume.state != resumeDone {
			return c.readResumed(p, c.sessionID(), c.timeout())
		}
		return c.readFrames(p)
	}
	// No read crosses the end of the handshake's reply: the frames after it
	// are read frame by frame (own.go). go-zookeeper reads it exactly anyway.
	lim := 4 - c.n
	if c.n >= 4 {
		lim = c.handshakeLen() - c.n
	}
	n, err := c.r.Read(p[:min(len(p), lim)])
	if n > 0 {
		if c.n < len(c.head) {
			copy(c.head[c.n:], p[:n])
		}
		before := c.n
		c.n += n
		if before < 12 && c.n >= 12 {
			if ms := int32(binary.BigEndian.Uint32(c.head[8:12])); ms > 0 {
				c.granted.Store(int64(ms))
			}
		}
		if c.n >= 4 && c.n >= c.handshakeLen() && c.n >= len(c.head) {
			c.onSession() // the whole reply is read: go-zookeeper reads it in two reads, exactly
		}
	}
	return n, err
}

// sessionID is the session the server gave this connection in its
// handshake's reply (go-zookeeper reads that reply before it writes any
// request).
func (c *conn) sessionID() int64 { return int64(binary.BigEndian.Uint64(c.head[12:20])) }

// resumed reports whether the handshake resumed the session it asked for
// (known once its reply is read).
func (c *conn) resumed() bool {
	return c.resume.asked != 0 && c.sessionID() == c.resume.asked
}

// timeout is the session timeout the handshake's reply granted.
func (c *conn) timeout() time.Duration {
	return time.Duration(binary.BigEndian.Uint32(c.head[8:12])) * time.Millisecond
}

// handshakeLen is the length of the handshake's reply, its length field
// included (c.n >= 4).
func (c *conn) handshakeLen() int { return 4 + int(binary.BigEndian.Uint32(c.head[0:4])) }
