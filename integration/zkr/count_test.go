package zkr_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zkr count keeps a SharedCount (4 bytes) and a DistributedAtomicLong
// (8 bytes) in Curator's formats, and concurrent adds lose nothing.
func TestZkrCount_GetSetAddInCuratorsFormats(t *testing.T) {
	c := server(t)
	servers := strings.Join(c.Servers(), ",")
	conn := raw(t, c)
	base := testPath(t)
	count := func(want int, args ...string) string {
		t.Helper()
		code, out, stderr := run(t, servers, append([]string{"count"}, args...)...)
		require.Equal(t, want, code, "zkr count %q: %s", args, stderr)
		return strings.TrimSpace(out)
	}

	code, _, stderr := run(t, servers, "count", "get", base+"/shared")
	assert.Equal(t, 69, code, "get on a missing node fails")
	assert.Contains(t, stderr, "no counter")

	assert.Equal(t, "5", count(0, "set", base+"/shared", "5"))
	data, _, err := conn.Get(base + "/shared")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 5}, data, "a new node is a SharedCount")
	assert.Equal(t, "2", count(0, "add", base+"/shared", "-3"))
	assert.Equal(t, "2", count(0, "get", base+"/shared"))

	assert.Equal(t, "7", count(0, "add", base+"/long", "7", "--long"))
	data, _, err = conn.Get(base + "/long")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 7}, data, "--long makes a DistributedAtomicLong")
	assert.Equal(t, "8", count(0, "add", base+"/long", "1"), "an existing node keeps its format")
	assert.Equal(t, "8", count(0, "get", base+"/long"))

	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, stderr := run(t, servers, "count", "add", base+"/shared", "10")
			assert.Equal(t, 0, code, stderr)
		}()
	}
	wg.Wait()
	assert.Equal(t, "42", count(0, "get", base+"/shared"), "concurrent adds lose nothing")

	_, err = conn.Create(base+"/text", []byte("hello"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	code, _, stderr = run(t, servers, "count", "add", base+"/text", "1")
	assert.Equal(t, 69, code)
	assert.Contains(t, stderr, "not an AtomicCounter")

	for _, args := range [][]string{{"count"}, {"count", "get"}, {"count", "add", "/p"}, {"count", "add", "/p", "x"}, {"count", "pop", "/p"}, {"count", "get", "p"}} {
		code, _, _ := run(t, servers, args...)
		assert.Equal(t, 64, code, "%q", args)
	}
	code, out, _ := run(t, servers, "count", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage")
}
