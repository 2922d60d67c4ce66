package zktest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A port taken between planning and the server's bind is recognised, so that
// startCluster retries with fresh ports.
func TestBindClashIsRecognised(t *testing.T) {
	b, err := newJavaBackend()
	if isNoBackend(err) {
		if inCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	require.NoError(t, err)
	specs, err := planPorts(1, false)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", specs[0].addr())
	require.NoError(t, err)
	defer ln.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ms, err := b.launch(ctx, t.TempDir(), specs, newConfig(nil))
	require.NoError(t, err)
	c := &Cluster{members: ms}
	defer c.closeMembers()
	require.Error(t, c.waitAll(ctx))
	require.True(t, bindClash(ms[0].logTail(300)), "log:\n%s", ms[0].logTail(30))
}

func TestZooCfgIsLoopbackOnly(t *testing.T) {
	specs := []serverSpec{{1, 2181, 2888, 3888, 0}, {2, 2182, 2889, 3889, 0}}
	cfg := zooCfg(specs, 1, "/data", 200*time.Millisecond)
	require.Contains(t, cfg, "clientPortAddress=127.0.0.1\n")
	require.Contains(t, cfg, "quorumListenOnAllIPs=false\n")
	require.Contains(t, cfg, "server.1=127.0.0.1:2888:3888\n")
	require.Contains(t, cfg, "clientPort=2182\n")
	require.Contains(t, cfg, "minSessionTimeout=400\n")
	require.Contains(t, cfg, "maxSessionTimeout=60000\n")
}

// The "java" backend starts its servers with the test-tuned JVM flags, or
// with those WithJVMFlags gives instead.
func TestJavaBackendStartsServersWithTheJVMFlagsAskedFor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      []Option
		want, not string
	}{
		{"default", nil, "-XX:TieredStopAtLevel=1", "-Dzktest.marker"},
		{"WithJVMFlags", []Option{WithJVMFlags("-Dzktest.marker=1")}, "-Dzktest.marker=1", "-XX:TieredStopAtLevel=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Start(t, append([]Option{WithBackend("java")}, tc.opts...)...)
			js, ok := c.members[0].(*javaServer)
			require.True(t, ok)
			js.mu.Lock()
			pid := js.cmd.Process.Pid
			js.mu.Unlock()
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			require.NoError(t, err)
			args := strings.Split(string(cmdline), "\x00")
			require.Contains(t, args, tc.want)
			require.NotContains(t, args, tc.not)
			require.Contains(t, args, "-Djava.net.preferIPv4Stack=true")
		})
	}
}

// WithReconfig's files: the client port only in the dynamic file (so that
// /zookeeper/config names it), reconfiguration on, a super user, every
// address on loopback; a spare's dynamic file lists the ensemble and it.
func TestReconfigCfgPutsClientAddressesInTheDynamicFile(t *testing.T) {
	specs := []serverSpec{{1, 2181, 2888, 3888, 0}, {2, 2182, 2889, 3889, 0}, {3, 2183, 2890, 3890, 0}}
	zoo, dyn := reconfigCfg(specs, 2, 0, "/data", "/d/zoo.cfg.dynamic", 200*time.Millisecond)
	require.NotContains(t, zoo, "clientPort")
	require.Contains(t, zoo, "reconfigEnabled=true\n")
	require.Contains(t, zoo, "standaloneEnabled=false\n")
	require.Contains(t, zoo, "quorumListenOnAllIPs=false\n")
	require.Contains(t, zoo, "dynamicConfigFile=/d/zoo.cfg.dynamic\n")
	require.Contains(t, zoo, "DigestAuthenticationProvider.superDigest=super:")
	require.Equal(t, "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n"+
		"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n", dyn)
	_, dyn = reconfigCfg(specs, 2, 2, "/data", "/d/zoo.cfg.dynamic", 200*time.Millisecond)
	require.True(t, strings.HasSuffix(dyn, "server.3=127.0.0.1:2890:3890:participant;127.0.0.1:2183\n"), dyn)
}
