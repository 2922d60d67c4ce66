package wire

import "encoding/binary"

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
// The real zxid is kept by the layer (Layer.zxid) as go-zookeeper would
// have kept it, and written where go-zookeeper would have used it:
//
//   - the lastZxidSeen of a ConnectRequest, by which a server refuses a
//     client that has seen more than the server has (so a reconnection
//     never goes back in time);
//   - the relativeZxid of every SetWatches, from which the server reports
//     the changes made while the client was cut off. A connection writes
//     the value the layer held when its handshake was written (the last
//     zxid read on the connections before), whenever go-zookeeper gets to
//     build the request, so that a reply read on the new connection in the
//     meantime cannot move it past a change the client was not told of.
//
// go-zookeeper returns a reply's zxid to no caller, so nothing else sees
// the 0.

// zxidAt is the offset of a reply frame's zxid (length, xid, zxid, err).
const zxidAt = 8

// passesZxid reports whether a reply frame with this xid carries a zxid
// go-zookeeper records: a reply to one of its requests (notifications,
// pings and the credentials' replies have negative xids).
func passesZxid(xid int32) bool { return xid >= 0 }

// recordZxid keeps the zxid of a reply of go-zookeeper's (its header hdr:
// length, xid, zxid) as go-zookeeper would have: a zxid above 0 replaces
// the last.
func (l *Layer) recordZxid(hdr []byte) {
	if z := int64(binary.BigEndian.Uint64(hdr[zxidAt : zxidAt+8])); z > 0 {
		l.zxid.Store(z)
	}
}

// blankZxid zeroes the bytes of a frame's zxid among p, which holds the
// frame's bytes from offset off on.
func blankZxid(p []byte, off int) {
	for i := max(zxidAt-off, 0); i < min(zxidAt+8-off, len(p)); i++ {
		p[i] = 0
	}
}

// handshakeZxid writes the layer's last zxid into a ConnectRequest
// (length, protocolVersion, lastZxidSeen, ...) about to be written, and
// returns it.
func (l *Layer) handshakeZxid(p []byte) int64 {
	z := l.zxid.Load()
	if len(p) >= 16 {
		binary.BigEndian.PutUint64(p[8:16], uint64(z))
	}
	return z
}

// setWatchesZxid writes z as the relativeZxid of a SetWatches frame
// (length, xid, opcode, relativeZxid, ...).
func setWatchesZxid(p []byte, z int64) {
	if len(p) >= 20 {
		binary.BigEndian.PutUint64(p[12:20], uint64(z))
	}
}
