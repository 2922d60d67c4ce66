package zktest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// A test that asks for ZooKeeper 3.9 gets a 3.9 server that grants a
// client a session (the jars of 3.8 and 3.9 mixed on one class path start
// a server that answers four-letter words but fails every handshake).
func TestServerVersion39_ServesThatVersionToAClient(t *testing.T) {
	c := zktest.Start(t, zktest.WithServerVersion(zktest.Version39), zktest.WithBackend(zktest.BackendJava))
	srvr, err := c.Srvr(0)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(srvr["Zookeeper version"], "3.9."), "srvr says %q", srvr["Zookeeper version"])
	conn, _, err := zk.Connect(c.Servers(), 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	require.Eventually(t, func() bool { return conn.State() == zk.StateHasSession }, 20*time.Second, 10*time.Millisecond, "no session from the 3.9 server")
	_, err = conn.Create("/v39", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
}

func TestServerVersion_UnknownOrOnAnotherBackendFailsTheStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	closeIfStarted := func(c *zktest.Cluster) {
		if c != nil { // a start that should have failed did not: stop it
			_ = c.Close()
		}
	}
	c, err := zktest.StartCluster(ctx, zktest.WithServerVersion("3.4"))
	closeIfStarted(c)
	require.ErrorContains(t, err, "unknown ZooKeeper version")
	c, err = zktest.StartCluster(ctx, zktest.WithServerVersion(zktest.Version39), zktest.WithBackend(zktest.BackendDocker))
	closeIfStarted(c)
	require.ErrorContains(t, err, "java backend only")
}
