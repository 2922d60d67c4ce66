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

// zkr watch --persistent prints what one persistent watch is notified of:
// the node's changes, or with -r its subtree's.
func TestZkrWatchPersistent_PrintsEveryNotificationOfTheNodeOrItsSubtree(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/zkr", nil, 0, acl); err != zk.ErrNodeExists {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, p := range []string{path + "/a/b", path + "/a", path} {
			_ = conn.Delete(p, -1)
		}
	})
	node := start(t, c.ConnectString(), "watch", path, "--persistent")
	tree := start(t, c.ConnectString(), "watch", path, "-r", "--persistent")
	has := func(p *proc, s string) func() bool {
		return func() bool { return strings.Contains(p.stdout.String(), s) }
	}
	require.Eventually(t, has(node, "WATCHING "+path+" (persistent)"), 20*time.Second, 10*time.Millisecond)
	require.Eventually(t, has(tree, "WATCHING "+path+" (persistent, recursive)"), 20*time.Second, 10*time.Millisecond)

	_, err := conn.Create(path, nil, 0, acl)
	require.NoError(t, err)
	_, err = conn.Create(path+"/a", nil, 0, acl)
	require.NoError(t, err)
	_, err = conn.Create(path+"/a/b", nil, 0, acl)
	require.NoError(t, err)
	_, err = conn.Set(path+"/a/b", []byte("x"), -1)
	require.NoError(t, err)
	require.Eventually(t, has(tree, "DATA_CHANGED "+path+"/a/b"), 20*time.Second, 10*time.Millisecond)
	for _, want := range []string{"NODE_CREATED " + path + "\n", "NODE_CREATED " + path + "/a\n", "NODE_CREATED " + path + "/a/b\n"} {
		assert.Contains(t, tree.stdout.String(), want)
	}
	require.Eventually(t, has(node, "CHILDREN_CHANGED "+path+"\n"), 20*time.Second, 10*time.Millisecond)
	assert.Contains(t, node.stdout.String(), "NODE_CREATED "+path+"\n")
	assert.NotContains(t, node.stdout.String(), path+"/a", "without -r, only the node")

	for _, p := range []*proc{node, tree} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
		assert.Equal(t, 0, p.wait(t, 20*time.Second))
	}
	code, _, _ := run(t, c.ConnectString(), "watch", path, "-r", "--depth", "1", "--persistent")
	assert.Equal(t, 64, code, "--depth with --persistent")
}
