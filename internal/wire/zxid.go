package wire

import (
	"encoding/binary"
	"sync"
)

// go-zookeeper records the zxid of every reply it reads as its last zxid,
// on its reading goroutine, and reads that field on its connecting
// goroutine to build SetWatches after a reconnection, with nothing ordering
// the two (go-zookeeper/zk#35): a data race on any connection where a reply
// is read before go-zookeeper has looked at its watches, which a busy
// machine makes common, on a new session as on a resumed one.
//
// So the layer keeps that zxid itself. Every reply of go-zookeeper's
// reaches it with a zxid of 0, which go-zookeeper does not record: the
// field is written only when go-zookeeper starts and when its session
// expires, both on the goroutine that reads it, and the race cannot occur.
// go-zookeeper returns a reply's zxid to no caller, so nothing else sees
// the 0. The layer writes the real values where go-zookeeper would have
// used its own:
//
//   - the lastZxidSeen of a ConnectRequest: the last zxid read (Layer.zxid),
//     by which a server refuses a client that has seen more than the server
//     has, so that a reconnection never goes back in time;
//   - the relativeZxid of SetWatches, from which the server reports the
//     changes made while the client was cut off: the re-set base
//     (Layer.base), the last zxid read while every watch go-zookeeper holds
//     was set on the server. On a resumed connection where go-zookeeper
//     holds watches, the base stays where it was at the handshake until the
//     server has answered SetWatches requests carrying as many watches as
//     go-zookeeper held: a reply read before that (to a request written
//     before SetWatches, or while a SetWatches is on its way) may be newer
//     than a change no watch of this connection was there to report, and
//     must not become the base should the connection be lost again. Every
//     SetWatches a resumed connection writes carries the base of its
//     handshake; one on a new session's connection, whose watches were all
//     set on it, carries the base as it is written.

// zxidAt is the offset of a reply frame's zxid (length, xid, zxid, err).
const zxidAt = 8

// passesZxid reports whether a reply frame with this xid carries a zxid
// go-zookeeper records: a reply to one of its requests (notifications,
// pings and the credentials' replies have negative xids).
func passesZxid(xid int32) bool { return xid >= 0 }

// resetState is a connection's side of the re-set base.
type resetState struct {
	since int64 // the base when the handshake was written

	mu  sync.Mutex
	out map[int32]int // go-zookeeper's SetWatches written and not answered: xid → watches carried

	// Read side only.
	owed int // watches go-zookeeper held at the handshake and has not re-set yet
}

// recordZxid keeps the zxid of a reply of go-zookeeper's (its header hdr:
// length, xid, zxid, err) as go-zookeeper would have: a zxid above 0
// replaces the last, and the base unless c still owes watches. A reply to
// a SetWatches counts its watches as re-set first.
func (c *conn) recordZxid(hdr []byte) {
	xid := int32(binary.BigEndian.Uint32(hdr[4:8]))
	rs := &c.reset
	if rs.owed > 0 {
		rs.mu.Lock()
		n, ok := rs.out[xid]
		delete(rs.out, xid)
		rs.mu.Unlock()
		if ok && len(hdr) >= zxidAt+12 && int32(binary.BigEndian.Uint32(hdr[zxidAt+8:])) == CodeOK {
			rs.owed -= n
		}
	}
	if z := int64(binary.BigEndian.Uint64(hdr[zxidAt : zxidAt+8])); z > 0 {
		c.layer.zxid.Store(z)
		if rs.owed <= 0 {
			c.layer.base.Store(z)
		}
	}
}

// blankZxid zeroes the bytes of a frame's zxid among p, which holds the
// frame's bytes from offset off on.
func blankZxid(p []byte, off int) {
	for i := max(zxidAt-off, 0); i < min(zxidAt+8-off, len(p)); i++ {
		p[i] = 0
	}
}

// handshakeFrame returns a ConnectRequest about to be written (length,
// protocolVersion, lastZxidSeen, ...) with the layer's last zxid in it, and
// notes the base the connection's SetWatches start from. go-zookeeper's
// buffer is left alone.
func (c *conn) handshakeFrame(p []byte) []byte {
	p = append([]byte(nil), p...)
	if len(p) >= 16 {
		binary.BigEndian.PutUint64(p[8:16], uint64(c.layer.zxid.Load()))
	}
	c.reset.since = c.layer.base.Load()
	return p
}

// setWatchesFrame returns a SetWatches frame of go-zookeeper's about to be
// written (length, xid, opcode, relativeZxid, lists) with the base in it,
// and notes what it carries on a resumed connection. go-zookeeper's buffer
// is left alone.
func (c *conn) setWatchesFrame(p []byte) []byte {
	if len(p) < 20 {
		return p
	}
	p = append([]byte(nil), p...)
	z := c.layer.base.Load()
	if c.resumed() {
		z = c.reset.since
		rs := &c.reset
		rs.mu.Lock()
		if rs.out == nil {
			rs.out = make(map[int32]int)
		}
		rs.out[int32(binary.BigEndian.Uint32(p[4:8]))] = eachSetWatch(p[20:], nil)
		rs.mu.Unlock()
	}
	binary.BigEndian.PutUint64(p[12:20], uint64(z))
	return p
}

// LastZxid is the zxid of the last reply read on the session (0 before
// any, or once it expired): a node created later has a greater czxid.
func (l *Layer) LastZxid() int64 { return l.zxid.Load() }

// forgetZxid forgets the last zxid and the base, as go-zookeeper forgets
// its last zxid when its session expired.
func (l *Layer) forgetZxid() {
	l.zxid.Store(0)
	l.base.Store(0)
}
