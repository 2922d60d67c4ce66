package zkr_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The node commands' exit statuses (zkr help).
const (
	exitOK       = 0
	exitUsage    = 64
	exitConflict = 65
	exitNoNode   = 66
	exitZK       = 69
)

// zkrIn runs zkr to completion against servers with stdin as its
// standard input, and returns its status, stdout and stderr.
func zkrIn(t *testing.T, servers string, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	require.NoError(t, buildErr)
	cmd := zkrCmd(zkrBin, servers, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr zktest.LogBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("zkr %s still running after a minute:\n%s", strings.Join(args, " "), stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// fresh deletes the tree at path, from outside, now and when the test
// ends, so that a test that makes nodes runs again (-count=2) on the same
// server.
func fresh(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	var rm func(p string)
	rm = func(p string) {
		kids, _, err := conn.Children(p)
		if err == zk.ErrNoNode {
			return
		}
		require.NoError(t, err)
		for _, k := range kids {
			rm(p + "/" + k)
		}
		if err := conn.Delete(p, -1); err != nil && err != zk.ErrNoNode {
			require.NoError(t, err)
		}
	}
	rm(path)
	t.Cleanup(func() { rm(path) })
}

// nodeCLI runs the node commands of zkr against one server.
type nodeCLI struct {
	t       *testing.T
	servers string
}

// ok runs zkr and requires it to succeed; it returns stdout.
func (z nodeCLI) ok(args ...string) string {
	z.t.Helper()
	code, out, stderr := zkrIn(z.t, z.servers, nil, args...)
	require.Equal(z.t, exitOK, code, "zkr %q: %s", args, stderr)
	return out
}

// fails runs zkr and asserts it exits with want; it returns stderr.
func (z nodeCLI) fails(want int, args ...string) string {
	z.t.Helper()
	code, out, stderr := zkrIn(z.t, z.servers, nil, args...)
	assert.Equal(z.t, want, code, "zkr %q: stdout %q stderr %q", args, out, stderr)
	return stderr
}

// A tree made, read, written and removed with zkr alone, as with zkCli.sh:
// get returns the exact bytes given (stdin included), stat and set -v do
// a compare-and-set, ls -R lists the tree, rm -r removes it.
func TestZkrNodes_CreateGetSetStatLsRmRoundTrip(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	z := nodeCLI{t, c.ConnectString()}
	base := testPath(t)
	fresh(t, conn, base)

	assert.Equal(t, base+"/app/db\n", z.ok("create", "-p", base+"/app/db", "postgres://db:5432"))
	data, _, err := conn.Get(base + "/app/db")
	require.NoError(t, err)
	assert.Equal(t, "postgres://db:5432", string(data))
	assert.Equal(t, "postgres://db:5432", z.ok("get", base+"/app/db"), "get writes the data as it is: no newline")

	blob := []byte("line 1\nline 2\x00\xff\n")
	code, out, stderr := zkrIn(t, z.servers, blob, "create", base+"/app/blob", "-")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, base+"/app/blob\n", out)
	assert.Equal(t, string(blob), z.ok("get", base+"/app/blob"), "data from stdin comes back byte for byte")
	assert.Equal(t, "", z.ok("get", base+"/app"), "a parent made by -p is empty")
	assert.Equal(t, "-1", z.ok("get", z.okCreate(base+"/app/neg", "--", "-1")), "data after -- may start with -")

	stat := z.ok("stat", base+"/app/db")
	assert.Contains(t, stat, "dataVersion = 0\n")
	assert.Contains(t, stat, "dataLength = 18\n")
	assert.Contains(t, stat, "numChildren = 0\n")
	assert.Contains(t, stat, "ephemeralOwner = 0x0\n")

	assert.Equal(t, "", z.ok("set", base+"/app/db", "v1", "-v", "0"))
	code, out, stderr = zkrIn(t, z.servers, []byte("v2 from stdin"), "set", base+"/app/db", "-", "-s")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "dataVersion = 2\n", "set -s prints the new stat")
	code, out, stderr = zkrIn(t, z.servers, nil, "get", "-s", base+"/app/db")
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "v2 from stdin", out, "get -s keeps stdout for the data")
	assert.Contains(t, stderr, "dataVersion = 2\n", "and prints the stat on stderr")

	seq := strings.TrimSpace(z.ok("create", "-s", base+"/app/job-", "x"))
	assert.Regexp(t, `^`+base+`/app/job-\d{10}$`, seq, "create -s prints the name the server gave")
	job := seq[len(base+"/app/"):]

	assert.Equal(t, "blob\ndb\n"+job+"\nneg\n", z.ok("ls", base+"/app"), "ls prints the names, sorted")
	assert.Equal(t, base+"\n"+base+"/app\n"+base+"/app/blob\n"+base+"/app/db\n"+seq+"\n"+base+"/app/neg\n",
		z.ok("ls", "-R", base), "ls -R prints the tree, full paths, depth first")

	z.ok("rm", base+"/app/db", "-v", "2")
	ok, _, err := conn.Exists(base + "/app/db")
	require.NoError(t, err)
	assert.False(t, ok)
	z.ok("rm", "-r", base)
	ok, _, err = conn.Exists(base)
	require.NoError(t, err)
	assert.False(t, ok, "rm -r removes the tree")
}

// okCreate creates path with args and returns the path printed.
func (z nodeCLI) okCreate(path string, args ...string) string {
	z.t.Helper()
	return strings.TrimSpace(z.ok(append([]string{"create", path}, args...)...))
}

// Every node command tells a missing node (66) from a node not as
// required (65) and from a usage error (64), and names the path.
func TestZkrNodes_ErrorsHaveTheirOwnExitStatusAndNameThePath(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	z := nodeCLI{t, c.ConnectString()}
	base := testPath(t)
	fresh(t, conn, base)
	missing := base + "/missing"
	z.ok("create", "-p", base+"/full/child", "x")

	t.Run("no node", func(t *testing.T) {
		z := nodeCLI{t, z.servers}
		for _, args := range [][]string{
			{"ls", missing}, {"ls", "-R", missing}, {"get", missing}, {"stat", missing},
			{"set", missing, "x"}, {"rm", missing}, {"rm", "-r", missing},
		} {
			stderr := z.fails(exitNoNode, args...)
			assert.Contains(t, stderr, missing, "%q names the path", args)
			assert.Contains(t, stderr, "does not exist", "%q", args)
		}
		stderr := z.fails(exitNoNode, "create", missing+"/child")
		assert.Contains(t, stderr, missing+"/child")
		assert.Contains(t, stderr, "-p", "a missing parent points to -p")
	})

	t.Run("node exists", func(t *testing.T) {
		z := nodeCLI{t, z.servers}
		stderr := z.fails(exitConflict, "create", base+"/full", "y")
		assert.Contains(t, stderr, base+"/full")
		assert.Contains(t, stderr, "already exists")
		data, _, err := conn.Get(base + "/full")
		require.NoError(t, err)
		assert.Empty(t, data, "the node keeps its data")
	})

	t.Run("bad version", func(t *testing.T) {
		z := nodeCLI{t, z.servers}
		stderr := z.fails(exitConflict, "set", base+"/full/child", "new", "-v", "7")
		assert.Contains(t, stderr, base+"/full/child")
		assert.Contains(t, stderr, "-v 7")
		assert.Equal(t, "x", z.ok("get", base+"/full/child"), "set -v with another version writes nothing")

		z.fails(exitConflict, "rm", base+"/full/child", "-v", "3")
		z.fails(exitConflict, "rm", "-r", "-v", "3", base+"/full")
		assert.Equal(t, []string{"child"}, children(t, conn, base+"/full"), "rm -r -v with another version deletes nothing")

		_, err := conn.Set(base+"/full/child", []byte("moved"), -1)
		require.NoError(t, err)
		z.fails(exitConflict, "set", base+"/full/child", "stale", "-v", "0")
		z.ok("set", base+"/full/child", "fresh", "-v", "1")
		assert.Equal(t, "fresh", z.ok("get", base+"/full/child"))
	})

	t.Run("not empty", func(t *testing.T) {
		z := nodeCLI{t, z.servers}
		stderr := z.fails(exitConflict, "rm", base+"/full")
		assert.Contains(t, stderr, base+"/full")
		assert.Contains(t, stderr, "-r", "points to -r")
		assert.Equal(t, []string{"child"}, children(t, conn, base+"/full"))
	})

	t.Run("bad path", func(t *testing.T) {
		z := nodeCLI{t, z.servers}
		for _, args := range [][]string{
			{"ls", "relative"}, {"get", base + "/"}, {"stat", base + "//x"}, {"set", "x", "d"},
			{"create", base + "/a/../b"}, {"rm", "/"}, {"rm", "-r", "/"},
		} {
			stderr := z.fails(exitUsage, args...)
			assert.Contains(t, stderr, "invalid path", "%q", args)
		}
		z.fails(exitUsage, "ls", "/", "--namespace", "a//b")
	})

	t.Run("bad flags and arguments", func(t *testing.T) {
		z := nodeCLI{t, z.servers}
		for _, args := range [][]string{
			{"ls"}, {"ls", "/a", "/b"}, {"ls", "--nope", "/"}, {"ls", "/", "--", "x"},
			{"get"}, {"get", "-R", "/a"}, {"stat"}, {"stat", "/a", "/b"},
			{"set", "/a"}, {"set", "/a", "x", "y"}, {"set", "/a", "x", "-v", "nine"}, {"set", "/a", "x", "-v", "4294967296"},
			{"create"}, {"create", "/a", "x", "y"}, {"create", "-c", "-s", "/a"}, {"create", "-c", "--ttl", "1m", "/a"},
			{"create", "--ttl", "-1s", "/a"}, {"create", "--ttl", "1ns", "/a"},
			{"rm"}, {"rm", "/a", "/b"}, {"rm", "-R", "/a"},
		} {
			z.fails(exitUsage, args...)
		}
		stderr := z.fails(exitUsage, "create", "-e", base+"/eph")
		assert.Contains(t, stderr, "ephemeral")
		ok, _, err := conn.Exists(base + "/eph")
		require.NoError(t, err)
		assert.False(t, ok, "-e creates nothing")

		code, _, stderr := zkrIn(t, "", nil, "ls", "/")
		assert.Equal(t, exitUsage, code, "no servers is a usage error: %s", stderr)
	})

	t.Run("help", func(t *testing.T) {
		for _, cmd := range []string{"ls", "get", "stat", "set", "create", "rm"} {
			code, out, _ := zkrIn(t, z.servers, nil, cmd, "--help")
			assert.Equal(t, exitOK, code, cmd)
			assert.Contains(t, out, "usage: zkr "+cmd, cmd)
			assert.Contains(t, out, "66 no such node", "%s --help tells the exit statuses", cmd)
		}
	})
}

// --namespace roots every path under its node: create -p makes it, the
// paths printed are relative to it, and "/" is its root.
func TestZkrNodes_NamespaceRootsThePaths(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	z := nodeCLI{t, c.ConnectString()}
	ns := strings.TrimPrefix(testPath(t), "/")
	fresh(t, conn, "/"+ns)
	assert.Equal(t, "/cfg/a\n", z.ok("create", "-p", "--namespace", ns, "/cfg/a", "1"))
	data, _, err := conn.Get("/" + ns + "/cfg/a")
	require.NoError(t, err)
	assert.Equal(t, "1", string(data))
	assert.Equal(t, "cfg\n", z.ok("ls", "--namespace", ns, "/"))
	assert.Equal(t, "/\n/cfg\n/cfg/a\n", z.ok("ls", "-R", "--namespace", ns, "/"))
	z.fails(exitNoNode, "get", "/"+ns+"/cfg/a", "--namespace", ns)
	z.ok("rm", "-r", "--namespace", ns, "/cfg")
	assert.Empty(t, children(t, conn, "/"+ns))
}

// create -c makes a container and --ttl a TTL node (-s: sequential),
// which the server reaps: the container once its last child is gone, the
// TTL nodes after their TTL. TTL nodes need a server started with
// zookeeper.extendedTypesEnabled; the reaper is made to run often.
func TestZkrNodes_CreateContainerAndTTLNodesTheServerReaps(t *testing.T) {
	require.NoError(t, buildErr)
	// A server of the test's own whose reaper runs every 100ms (the
	// default is every minute).
	c := zktest.Start(t, zktest.WithJVMFlags("-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-Dznode.container.checkIntervalMs=100"))
	conn := raw(t, c)
	z := nodeCLI{t, c.ConnectString()}
	base := testPath(t)
	gone := func(p string) func() bool {
		return func() bool { ok, _, err := conn.Exists(p); return err == nil && !ok }
	}

	z.ok("create", "-p", "-c", base+"/box")
	z.ok("create", base+"/box/item")
	z.ok("create", base+"/keep")
	z.ok("create", "--ttl", "1s", base+"/ttl", "t")
	seq := z.okCreate(base+"/ttlseq-", "--ttl", "1s", "-s")
	assert.Regexp(t, `/ttlseq-\d{10}$`, seq)
	data, _, err := conn.Get(base + "/ttl")
	require.NoError(t, err, "the TTL node is made")
	assert.Equal(t, "t", string(data))

	z.ok("rm", base+"/box/item")
	assert.Eventually(t, gone(base+"/box"), time.Minute, 50*time.Millisecond, "the container goes once its last child is gone")
	assert.Eventually(t, gone(base+"/ttl"), time.Minute, 50*time.Millisecond, "the TTL node goes after its TTL")
	assert.Eventually(t, gone(seq), time.Minute, 50*time.Millisecond, "the sequential TTL node too")
	ok, _, err := conn.Exists(base + "/keep")
	require.NoError(t, err)
	assert.True(t, ok, "a persistent node stays")
}
