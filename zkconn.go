package zkrecipes

import "net"

// quietWriteConn is the connection go-zookeeper writes to (the top of
// Connect's dialer stack). A write that fails closes the connection and
// reports success: every request awaiting a reply on it, the one written
// among them, then fails once, with zk.ErrConnectionClosed (it may or may
// not have reached the server, as the write's error meant too).
type quietWriteConn struct{ net.Conn }

func (c quietWriteConn) Write(p []byte) (int, error) {
	// go-zookeeper answers a request whose write failed twice: with the
	// write's error, and again when the connection's end flushes the
	// requests awaiting a reply. Where the request's reply channel holds
	// one answer (the credentials re-sent after a reconnection, a request
	// racing Close), the flush blocks for good with go-zookeeper's lock
	// held: no reconnection, and a goroutine outliving Close
	// (docs/reliability.md). Reported written, the request gets the
	// flush's answer only.
	if _, err := c.Conn.Write(p); err != nil {
		_ = c.Conn.Close()
	}
	return len(p), nil
}
