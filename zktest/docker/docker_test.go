package docker_test

import (
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
	_ "github.com/zkrecipes/zkrecipes/zktest/docker"
	"github.com/zkrecipes/zkrecipes/zktest/internal/testclient"
)

// TestDocker_ServerServesAndSurvivesKillRestart runs only with ZK_TEST_BACKEND=docker
// (make test does, after building the local image).
func TestDocker_ServerServesAndSurvivesKillRestart(t *testing.T) {
	if os.Getenv("ZK_TEST_BACKEND") != zktest.BackendDocker {
		t.Skip("set ZK_TEST_BACKEND=docker to run the docker backend test")
	}
	c := zktest.Start(t)
	require.Equal(t, zktest.BackendDocker, c.Backend())
	t.Logf("docker: standalone serving after %v", c.StartDuration())
	srvr, err := c.Srvr(0)
	require.NoError(t, err)
	require.Equal(t, "standalone", srvr["Mode"])

	conn, ev := testclient.Connect(t, c.Servers(), 10*time.Second, nil)
	sid := conn.SessionID()
	_, err = conn.Create("/docker", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	n := ev.Len()
	t0 := time.Now()
	require.NoError(t, c.Kill(0))
	ev.WaitState(t, n, zk.StateDisconnected, 10*time.Second)
	require.NoError(t, c.Restart(0))
	t.Logf("docker: kill + restart until serving took %v", time.Since(t0))
	ev.WaitState(t, n, zk.StateHasSession, 20*time.Second)
	require.Equal(t, sid, conn.SessionID(), "session survives a restart within its timeout")
	b, _, err := conn.Get("/docker")
	require.NoError(t, err)
	require.Equal(t, "x", string(b))

	require.NoError(t, c.Stop(0))
	require.NoError(t, c.Cont(0))
}

// TestDocker_Ensemble starts a 3-container ensemble on the host network.
func TestDocker_Ensemble(t *testing.T) {
	if os.Getenv("ZK_TEST_BACKEND") != zktest.BackendDocker {
		t.Skip("set ZK_TEST_BACKEND=docker to run the docker backend test")
	}
	c := zktest.Start(t, zktest.WithSize(3))
	t.Logf("docker: 3-node ensemble serving after %v", c.StartDuration())
	_, err := c.Leader()
	require.NoError(t, err)
	conn, _ := testclient.Connect(t, c.Servers(), 6*time.Second, nil)
	_, err = conn.Create("/ens", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
}
