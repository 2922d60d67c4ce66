package zkr_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zkr watch prints the node, then each change as it happens; with -r the
// whole tree, nested nodes included. Ctrl-C ends it with status 0.
func TestZkrWatch_PrintsTheNodeOrTheTreeAndEveryChange(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/zkr", nil, 0, acl); err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	_, err := conn.Create(path, []byte("v1"), 0, acl)
	require.NoError(t, err)
	_, err = conn.Create(path+"/a", []byte("child"), 0, acl)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, p := range []string{path + "/a/b", path + "/a", path} {
			_ = conn.Delete(p, -1)
		}
	})

	node := start(t, c.ConnectString(), "watch", path)
	tree := start(t, c.ConnectString(), "watch", path, "-r")
	has := func(p *proc, s string) func() bool {
		return func() bool { return strings.Contains(p.stdout.String(), s) }
	}
	require.Eventually(t, has(node, "INITIALIZED"), 20*time.Second, 10*time.Millisecond)
	require.Eventually(t, has(tree, "INITIALIZED"), 20*time.Second, 10*time.Millisecond)
	assert.Contains(t, tree.stdout.String(), "CREATED "+path+"/a ", "the tree's nodes come first")
	assert.Contains(t, node.stdout.String(), path+" czxid=", "the node as it is")

	_, err = conn.Set(path, []byte("v2"), -1)
	require.NoError(t, err)
	_, err = conn.Create(path+"/a/b", []byte("nested"), 0, acl)
	require.NoError(t, err)
	require.Eventually(t, has(tree, "CREATED "+path+`/a/b czxid=`), 20*time.Second, 10*time.Millisecond)
	require.NoError(t, conn.Delete(path+"/a/b", -1))
	require.Eventually(t, has(node, `CHANGED `+path+` `), 20*time.Second, 10*time.Millisecond)
	assert.Contains(t, node.stdout.String(), `version=1 "v2"`)
	require.Eventually(t, has(tree, "DELETED "+path+"/a/b "), 20*time.Second, 10*time.Millisecond)
	assert.Contains(t, tree.stdout.String(), `CHANGED `+path+` `)
	assert.NotContains(t, node.stdout.String(), path+"/a", "without -r, only the node")

	for _, p := range []*proc{node, tree} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
		assert.Equal(t, 0, p.wait(t, 20*time.Second))
	}
	code, _, _ := run(t, c.ConnectString(), "watch", path, "--depth", "1")
	assert.Equal(t, 64, code, "--depth without -r")
	code, _, _ = run(t, c.ConnectString(), "watch", "relative")
	assert.Equal(t, 64, code, "a relative path")
}
