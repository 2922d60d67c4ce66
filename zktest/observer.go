package zktest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Observer opens a plain go-zookeeper connection to the cluster, for a
// test to look at what is on the server from outside the code under test.
// It waits until the connection has a session, fails the test if none is
// established within 20 s, and closes the connection in tb.Cleanup.
func (c *Cluster) Observer(tb testing.TB) *zk.Conn {
	tb.Helper()
	conn, _, err := zk.Connect(c.Servers(), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}),
		zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return dialLoopback(ctx, address)
		}))
	if err != nil {
		tb.Fatalf("zktest: observer connection: %v", err)
	}
	tb.Cleanup(conn.Close)
	deadline := time.Now().Add(20 * time.Second)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			tb.Fatalf("zktest: observer connection: no session within 20s")
		}
		time.Sleep(5 * time.Millisecond) // polls the connection state; orders nothing
	}
	return conn
}

// Children lists path's children through conn, or none if path does not
// exist; any other error fails the test and gives none. It fails the test
// with tb.Errorf, not Fatalf, so that it may run inside a condition that
// require.Eventually polls on another goroutine.
func Children(tb testing.TB, conn *zk.Conn, path string) []string {
	tb.Helper()
	kids, _, err := conn.Children(path)
	if err == zk.ErrNoNode {
		return nil
	}
	if err != nil {
		tb.Errorf("zktest: children of %s: %v", path, err)
		return nil
	}
	return kids
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
