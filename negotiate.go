package zkrecipes

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"
)

// go-zookeeper keeps the session timeout the server granted to itself, yet
// the Session needs it: a client cut off for that long must presume its
// session expired, and a server may grant less than was asked for. So the
// Session's dialer reads it off the wire: the first frame a server sends on
// a connection is the ConnectResponse (length, protocolVersion, timeOut,
// sessionId, password).

// readBuffer is the read buffer of a Session's connection.
const readBuffer = 16 << 10

type dialFunc func(network, address string, timeout time.Duration) (net.Conn, error)

// negotiatingDialer wraps dial so that every connection records the
// granted session timeout, in milliseconds, into granted, and reads
// through a buffer: go-zookeeper reads every frame in two reads (its length,
// then its body), one system call each on a raw connection, whereas a
// buffered one takes the frames that arrived together (a reply and the
// notifications of its transaction) in one. A read deadline still applies
// whenever the buffer is empty.
//
// When sent is non-nil, it is told of every request frame written after
// the handshake (go-zookeeper writes each request in one Write), just
// before the frame is written or gathered. When wire
// is non-nil, it is set to each new connection, the one the Session's
// requests go over from then on (see gather.go).
func negotiatingDialer(dial dialFunc, granted *atomic.Int64, sent *sentNotifier, wire *atomic.Pointer[sniffConn]) dialFunc {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		sc := newSniffConn(c, granted, sent)
		if wire != nil {
			wire.Store(sc)
		}
		return sc, nil
	}
}

// sniffConn passes every byte through, reading the timeOut and sessionId
// fields of the first frame on the way.
type sniffConn struct {
	net.Conn
	r       *bufio.Reader
	granted *atomic.Int64
	head    [20]byte // length, protocolVersion, timeOut, sessionId
	n       int      // bytes read so far, up to the end of the handshake's reply
	sent    *sentNotifier
	shook   bool // the handshake has been written
	g       gatherer
	resume  resumer
}

func newSniffConn(c net.Conn, granted *atomic.Int64, sent *sentNotifier) *sniffConn {
	sc := &sniffConn{Conn: c, r: bufio.NewReaderSize(c, readBuffer), granted: granted, sent: sent}
	sc.resume.closed = make(chan struct{})
	return sc
}

func (c *sniffConn) Write(p []byte) (int, error) {
	if c.shook {
		return c.writeFrame(p)
	}
	c.resume.onHandshake(p)
	n, err := c.Conn.Write(p)
	c.shook = err == nil
	return n, err
}

func (c *sniffConn) Read(p []byte) (int, error) {
	if c.n >= 4 && c.n >= c.handshakeLen() {
		if c.resume.state != resumeDone {
			ms := time.Duration(binary.BigEndian.Uint32(c.head[8:12])) * time.Millisecond
			return c.readResumed(p, c.sessionID(), ms)
		}
		return c.r.Read(p)
	}
	n, err := c.r.Read(p)
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
	}
	return n, err
}

// sessionID is the session the server gave this connection in its
// handshake's reply (go-zookeeper reads that reply before it writes any
// request).
func (c *sniffConn) sessionID() int64 { return int64(binary.BigEndian.Uint64(c.head[12:20])) }

// handshakeLen is the length of the handshake's reply, its length field
// included (c.n >= 4).
func (c *sniffConn) handshakeLen() int { return 4 + int(binary.BigEndian.Uint32(c.head[0:4])) }

// grantedTimeout returns the session timeout the server granted, or the
// one asked for before any server answered.
func (s *Session) grantedTimeout() time.Duration {
	if ms := s.granted.Load(); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return s.cfg.timeout
}
