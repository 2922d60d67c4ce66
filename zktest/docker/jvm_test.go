package docker

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestJavaEntrypointGetsTheFlagsAskedForInPlaceOfItsOwnXFlags(t *testing.T) {
	entry := []string{"/usr/lib/jvm/java-17/bin/java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.net.preferIPv4Stack=true", "-Dzookeeper.log.dir=/tmp", "-cp", "/a.jar:/b.jar",
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", "/conf/zoo.cfg"}
	assert.Equal(t, []string{"/usr/lib/jvm/java-17/bin/java", "-Xmx1g",
		"-Djava.net.preferIPv4Stack=true", "-Dzookeeper.log.dir=/tmp", "-cp", "/a.jar:/b.jar",
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", "/conf/zoo.cfg"},
		withJVMFlags(entry, []string{"-Xmx1g"}))
	assert.Equal(t, []string{"/usr/lib/jvm/java-17/bin/java",
		"-Djava.net.preferIPv4Stack=true", "-Dzookeeper.log.dir=/tmp", "-cp", "/a.jar:/b.jar",
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", "/conf/zoo.cfg"},
		withJVMFlags(entry, []string{}), "WithJVMFlags(): the JVM's defaults")
	assert.Equal(t, entry[:1], withJVMFlags(entry[:1], nil))
}

// The "docker" backend starts its servers with the flags WithJVMFlags gives,
// in place of those its image has. Runs only with ZK_TEST_BACKEND=docker
// (make test does, after building the local image).
func TestDocker_StartsServersWithTheJVMFlagsAskedFor(t *testing.T) {
	if os.Getenv("ZK_TEST_BACKEND") != zktest.BackendDocker {
		t.Skip("set ZK_TEST_BACKEND=docker to run the docker backend test")
	}
	for _, tc := range []struct {
		name      string
		opts      []zktest.Option
		want, not string // on a java entrypoint's command line
		env       string // for any other image's scripts
	}{
		{"default", nil, "-XX:TieredStopAtLevel=1", "-Dzktest.marker=1",
			"JVMFLAGS=-Xmx256m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true"},
		{"WithJVMFlags", []zktest.Option{zktest.WithJVMFlags("-Dzktest.marker=1")}, "-Dzktest.marker=1", "-XX:TieredStopAtLevel=1",
			"JVMFLAGS=-Dzktest.marker=1 -Djava.net.preferIPv4Stack=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := zktest.Start(t, tc.opts...)
			require.Equal(t, zktest.BackendDocker, c.Backend())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			info := serverContainer(ctx, t, c.Servers()[0])
			require.NotNil(t, info.State)
			require.Contains(t, info.Config.Env, tc.env)
			if ep := info.Config.Entrypoint; len(ep) == 0 || !strings.HasSuffix(ep[0], "/java") {
				return // another image: its scripts start java with JVMFLAGS
			}
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", info.State.Pid))
			require.NoError(t, err)
			args := strings.Split(string(cmdline), "\x00")
			require.Contains(t, args, tc.want)
			require.NotContains(t, args, tc.not)
			require.Contains(t, args, "-Djava.net.preferIPv4Stack=true")
		})
	}
}

// serverContainer finds the container this process started for the server at addr:
// the one with this process's labels whose ZOO_CLIENT_PORT is addr's port.
func serverContainer(ctx context.Context, t *testing.T, addr string) container.InspectResponse {
	t.Helper()
	b, err := newDockerBackend(ctx)
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{Filters: client.Filters{}.
		Add("label", labelZKTest+"=1").Add("label", labelPID+"="+strconv.Itoa(os.Getpid()))})
	require.NoError(t, err)
	for _, c := range list.Items {
		r, err := b.cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		require.NoError(t, err)
		if r.Container.Config != nil && slices.Contains(r.Container.Config.Env, "ZOO_CLIENT_PORT="+port) {
			return r.Container
		}
	}
	t.Fatalf("no container of this process serves %s", addr)
	return container.InspectResponse{}
}
