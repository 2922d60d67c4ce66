package zkrecipes

import (
	"encoding/binary"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// authWriteFailer dials real connections. On the second, the write of the
// credentials go-zookeeper re-sends after a reconnection fails with a
// broken pipe, and the connection is shut, as when a server dies right
// after the handshake.
type authWriteFailer struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (d *authWriteFailer) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conns = append(d.conns, c)
	if len(d.conns) == 2 {
		return &authWriteFails{Conn: c}, nil
	}
	return c, nil
}

func (d *authWriteFailer) dialled() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

func (d *authWriteFailer) cutFirst() {
	d.mu.Lock()
	defer d.mu.Unlock()
	_ = d.conns[0].Close()
}

type authWriteFails struct{ net.Conn }

func (c *authWriteFails) Write(p []byte) (int, error) {
	const opSetAuth = 100
	if len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == opSetAuth {
		_ = c.Conn.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}
	}
	return c.Conn.Write(p)
}

// go-zookeeper answered a request whose write failed twice; for the
// credentials it re-sends after a reconnection, the second answer blocked
// its connection loop for good: the Session never connected again.
func TestZKSessionReconnectsWhenItsCredentialsCannotBeWrittenAfterAReconnection(t *testing.T) {
	d := &authWriteFailer{}
	ctx, s := zkSession(t, 60*time.Second, WithDigestAuth("zkt", "secret"), WithDialer(d.dial))
	_, err := s.Exists(ctx, "/")
	require.NoError(t, err)

	d.cutFirst()
	require.Eventually(t, func() bool { return d.dialled() >= 3 }, 20*time.Second, 10*time.Millisecond,
		"the Session dialled no third connection after the credentials' write failed on the second")
	_, err = s.Exists(ctx, "/")
	require.NoError(t, err, "the Session is usable on the third connection")
}
