package wire

import (
	"net"
	"sync/atomic"
	"time"
)

// DialFunc opens one TCP connection to a ZooKeeper server; its signature is
// go-zookeeper's zk.Dialer.
type DialFunc = func(network, address string, timeout time.Duration) (net.Conn, error)

// Layer is the wire layer of one client: every connection its Dialer opens
// reads the handshake, tells of create frames, gathers frames on request
// and orders a resumed session's SetWatches. It is the whole seam between
// this package and the recipes. A nil *Layer is the layer switched off:
// Granted returns 0, Gather does nothing, and Expect must not be called.
type Layer struct {
	granted atomic.Int64         // session timeout granted by the server, in ms
	sent    *Notifier            // told of the creates written
	cur     atomic.Pointer[conn] // the connection the client's requests go over now

	xid   atomic.Uint32 // the own requests' sequence (own.go)
	w     watches       // the persistent watches (watches.go)
	wlist atomic.Pointer[[]*Watch]
	shots shots        // go-zookeeper's one-shot watches on their paths (shots.go)
	zxid  atomic.Int64 // go-zookeeper's last zxid, kept for it (zxid.go)
	base  atomic.Int64 // the zxid its watches may be re-set from (zxid.go)

	// OnResumeFallback, if set before the first connection, is called on
	// the reading goroutine when a resumed connection's replies waited for
	// go-zookeeper's SetWatches until the read deadline (resume.go), with
	// how long they waited. It must not block.
	OnResumeFallback func(waited time.Duration)
}

// New returns a Layer with no connection yet.
func New() *Layer {
	return &Layer{sent: newNotifier()}
}

// Dialer wraps dial so that every connection it opens goes through the
// layer. Hand the result to exactly one go-zookeeper client (zk.WithDialer):
// each new connection becomes the one Gather acts on.
func (l *Layer) Dialer(dial DialFunc) DialFunc {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		wc := newConn(c, &l.granted, l.sent)
		wc.layer = l
		l.cur.Store(wc)
		return wc, nil
	}
}

// Granted returns the session timeout the server granted in the last
// handshake read, or 0 before any (and on a nil Layer).
func (l *Layer) Granted() time.Duration {
	if l == nil {
		return 0
	}
	return time.Duration(l.granted.Load()) * time.Millisecond
}

// Gather asks the current connection to write the next n request frames
// together (see gather.go). It does nothing for n < 2, before the first
// connection, and on a nil Layer.
func (l *Layer) Gather(n int) {
	if l == nil || n < 2 {
		return
	}
	if c := l.cur.Load(); c != nil {
		c.gather(n)
	}
}

// Expect returns what is told once a create request for path is written
// to a connection, and a function that forgets path: call it once the
// create is over, whether or not the notice came (see notice.go).
func (l *Layer) Expect(path string) (*Sent, func()) {
	return l.sent.expect(path)
}
