package zkrecipes

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests named TestZK* reach into the package against a real ZooKeeper
// named by ZK_SERVERS. The integration suite runs them against its server
// (TestRootPackageAgainstRealServer); the unit stage leaves them out with
// -skip '^TestZK'. Run without ZK_SERVERS they skip, and fail under CI.
func zkServers(t *testing.T) []string {
	t.Helper()
	s := os.Getenv("ZK_SERVERS")
	if s == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("ZK_SERVERS is not set")
		}
		t.Skip("needs ZK_SERVERS; integration/recipes runs it against a real server")
	}
	return strings.Split(s, ",")
}

// zkSession returns a context that ends after d and a Session on the
// ZK_SERVERS server; both end with the test.
func zkSession(t *testing.T, d time.Duration, opts ...SessionOption) (context.Context, *Session) {
	t.Helper()
	servers := zkServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	s, err := Connect(ctx, servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return ctx, s
}

// zkRaw returns a plain go-zookeeper connection to the ZK_SERVERS server,
// closed with the test. It makes /zkt, the tests' common parent, so that a
// test run alone finds it as one run after others does.
func zkRaw(t *testing.T) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(zkServers(t), 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	if _, err := c.Create("/zkt", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		require.NoError(t, err)
	}
	return c
}

func TestZKProtectedCreateDeletesANodeOfAnOlderSessionInsteadOfAdoptingIt(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	other := zkRaw(t)

	dir := "/zkt/protected-" + newUUID()
	require.NoError(t, s.ensureParents(ctx, dir))
	// A node carrying our UUID but owned by another session: what a lost
	// create reply leaves behind when the session changed meanwhile.
	uuid := newUUID()
	foreign, err := other.Create(joinPath(dir, protectedName(uuid, "lock-")), nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	gen, _, err := s.awaitConnected(ctx)
	require.NoError(t, err)
	n, ok, err := s.findProtected(ctx, dir, uuid, true, gen)
	require.NoError(t, err)
	assert.False(t, ok, "a node of another session is never adopted")
	assert.Empty(t, n.path)
	exists, _, err := other.Exists(foreign)
	require.NoError(t, err)
	assert.False(t, exists, "it is deleted instead")

	// A node of our own session is adopted.
	mine := newUUID()
	p, err := s.create(ctx, joinPath(dir, protectedName(mine, "lock-")), nil, zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(t, err)
	n, ok, err = s.findProtected(ctx, dir, mine, true, gen)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, p, n.path)
	assert.Equal(t, s.SessionID(), n.gen.id)
}

func TestZKProtectedCreateMakesContainerParents(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	dir := "/zkt/parents-" + newUUID() + "/a/b"
	n, err := s.createProtected(ctx, dir, "lock-", []byte("x"))
	require.NoError(t, err)
	assert.Regexp(t, `^`+dir+`/_c_[0-9a-f-]{36}-lock-\d{10}$`, n.path)
	_, st, err := s.conn.Exists(dir)
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner)
	// Containers: the server's container manager deletes them once empty.
	// (zk.Stat does not expose the container flag; the create mode is
	// asserted by the server accepting CreateContainer.)
}

// A lock's first use under parents that exist creates its own container
// only, one request whatever the depth (per-entity locks: /locks/orders/<id>).
func TestZKFirstLockUnderExistingParentsCreatesOnlyItsOwnContainer(t *testing.T) {
	var mu sync.Mutex
	var creates []string
	tracer := TracerFunc(func(ev TraceEvent) {
		if ev.Op == "createContainer" {
			mu.Lock()
			creates = append(creates, ev.Path)
			mu.Unlock()
		}
	})
	ctx, s := zkSession(t, 30*time.Second, WithTracer(tracer))
	require.NoError(t, s.ensureParents(ctx, "/zkt"))
	mu.Lock()
	creates = nil
	mu.Unlock()
	base := "/zkt/entities-" + newUUID() + "/a/b"
	require.NoError(t, s.ensureParents(ctx, base))
	mu.Lock()
	// …/a/b and …/a fail (no parent), then …/entities-…, …/a and …/a/b.
	assert.Len(t, creates, 5, "a fresh path: %q", creates)
	creates = nil
	mu.Unlock()

	l, err := NewMutex(s, base+"/order-1").Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{base + "/order-1"}, creates)
}

// setForTest sets a package variable that tunes the recipes for the
// test, and restores it once the test and its cleanups are done: the
// Sessions the test opened after this call are closed by then.
func setForTest[T any](t *testing.T, p *T, v T) {
	t.Helper()
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}
