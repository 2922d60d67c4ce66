package zktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/zktest"
	"github.com/zkrecipes/zkrecipes/zktest/internal/testclient"
)

func TestStandalone_StartsAndServes(t *testing.T) {
	var servers []string
	t.Run("serve", func(t *testing.T) {
		c := zktest.Start(t)
		t.Logf("backend %s: standalone serving after %v", c.Backend(), c.StartDuration())
		require.Equal(t, 1, c.Size())
		servers = c.Servers()
		require.Equal(t, servers[0], c.ConnectString())

		ctx := context.Background()
		require.NoError(t, zktest.Ruok(ctx, servers[0]))
		srvr, err := c.Srvr(0)
		require.NoError(t, err)
		require.Equal(t, "standalone", srvr["Mode"])
		mntr, err := c.Mntr(0)
		require.NoError(t, err)
		require.Contains(t, mntr["zk_version"], "3.")
		leader, err := c.Leader()
		require.NoError(t, err)
		require.Equal(t, 0, leader)
	})
	if t.Failed() || t.Skipped() {
		return
	}
	// Every server and helper goroutine is gone once the cluster's cleanup ran.
	goleak.VerifyNone(t)
	_, err := zktest.Srvr(context.Background(), servers[0])
	require.Error(t, err, "server still answers after cleanup")
}

func TestStandalone_ClientReadsItsWrite(t *testing.T) {
	c := zktest.Start(t)
	conn, _ := testclient.Connect(t, c.Servers(), 4*time.Second, nil)
	_, err := conn.Create("/zktest", []byte("hello"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	b, _, err := conn.Get("/zktest")
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
}

func TestStandalone_StopFreezesAndContResumes(t *testing.T) {
	c := zktest.Start(t)
	if err := c.Stop(0); errors.Is(err, zktest.ErrUnsupported) {
		t.Skip("backend cannot stop servers")
	} else {
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := zktest.Srvr(ctx, c.Servers()[0])
	require.Error(t, err, "a stopped server must not answer")
	require.NoError(t, c.Cont(0))
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	require.NoError(t, c.WaitServing(wctx, 0))
}

func TestStandalone_KillAndRestartKeepData(t *testing.T) {
	c := zktest.Start(t)
	conn, ev := testclient.Connect(t, c.Servers(), 10*time.Second, nil)
	_, err := conn.Create("/persist", []byte("v"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	n := ev.Len()
	if err := c.Kill(0); errors.Is(err, zktest.ErrUnsupported) {
		t.Skip("backend cannot kill servers")
	} else {
		require.NoError(t, err)
	}
	ev.WaitState(t, n, zk.StateDisconnected, 10*time.Second)
	require.NoError(t, c.Restart(0))
	// A handshake the server took while it was still loading gets no
	// answer until go-zookeeper's handshake deadline ends it: ten read
	// timeouts, 10 × 2/3 of the 10 s session timeout, about 67 s (a wait
	// of one minute failed beside two busy loops). The session may have
	// expired by then, and a new one comes. Either way the data is there.
	ev.WaitState(t, n, zk.StateHasSession, 2*time.Minute)
	b, _, err := conn.Get("/persist")
	require.NoError(t, err)
	require.Equal(t, "v", string(b))
}

func TestStartCluster_NoBackendSaysWhatToInstall(t *testing.T) {
	t.Setenv("ZK_SERVERS", "")
	t.Setenv("ZK_JAVA", "")
	t.Setenv("JAVA_HOME", "")
	t.Setenv("PATH", t.TempDir())
	_, err := zktest.StartCluster(context.Background(), zktest.WithBackend(zktest.BackendJava))
	require.ErrorIs(t, err, zktest.ErrNoBackend)
	require.Contains(t, err.Error(), "java")
}
