package zktest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	if os.Getenv("ZK_TEST_BACKEND") != BackendDocker {
		t.Skip("set ZK_TEST_BACKEND=docker to run the docker backend test")
	}
	for _, tc := range []struct {
		name      string
		opts      []Option
		want, not string // on a java entrypoint's command line
		env       string // for any other image's scripts
	}{
		{"default", nil, "-XX:TieredStopAtLevel=1", "-Dzktest.marker=1",
			"JVMFLAGS=-Xmx256m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true"},
		{"WithJVMFlags", []Option{WithJVMFlags("-Dzktest.marker=1")}, "-Dzktest.marker=1", "-XX:TieredStopAtLevel=1",
			"JVMFLAGS=-Dzktest.marker=1 -Djava.net.preferIPv4Stack=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Start(t, tc.opts...)
			require.Equal(t, BackendDocker, c.Backend())
			ds, ok := c.members[0].(*dockerServer)
			require.True(t, ok)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			info, err := ds.ctr.Inspect(ctx)
			require.NoError(t, err)
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
