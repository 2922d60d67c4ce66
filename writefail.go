package zkrecipes

import "net"

// quietWriteConn is the connection go-zookeeper writes to: a write that
// fails closes the connection and reports success. go-zookeeper cannot be
// trusted with a write's failure. Its writer hands the error to the
// request and leaves the request among those awaiting a reply, so the
// request is answered twice: once with the write's error, again when the
// connection's end flushes every request awaiting a reply. A request whose
// reply channel holds one answer (the credentials re-sent after a
// reconnection, a request racing Close) then blocks the flush forever,
// with go-zookeeper's lock held. The Session is left without a connection
// and without a way to make one, and a goroutine outlives Close.
//
// Reporting success leaves the one answer to the flush: the closed
// connection ends go-zookeeper's reader at once, and every request it
// held, this one among them, gets zk.ErrConnectionClosed: the request may
// or may not have reached the server, as the write's error meant too.
type quietWriteConn struct{ net.Conn }

func (c quietWriteConn) Write(p []byte) (int, error) {
	if _, err := c.Conn.Write(p); err != nil {
		_ = c.Conn.Close()
	}
	return len(p), nil
}
