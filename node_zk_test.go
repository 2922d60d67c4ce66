package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nsSession is a Session under a namespace of its own, with what its
// Tracer saw; the namespace is deleted with the test.
func nsSession(t *testing.T, opts ...SessionOption) (context.Context, *Session, string, func() []TraceEvent) {
	t.Helper()
	raw := zkRaw(t)
	ns := "/zkt/ns-" + newUUID()
	var mu sync.Mutex
	var seen []TraceEvent
	tr := WithTracer(TracerFunc(func(ev TraceEvent) {
		mu.Lock()
		seen = append(seen, ev)
		mu.Unlock()
	}))
	ctx, s := zkSession(t, 60*time.Second, append([]SessionOption{WithNamespace(ns), tr}, opts...)...)
	t.Cleanup(func() { deleteTree(raw, ns) })
	return ctx, s, ns, func() []TraceEvent {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// deleteTree deletes p and everything under it, from outside.
func deleteTree(c *zk.Conn, p string) {
	kids, _, _ := c.Children(p)
	for _, k := range kids {
		deleteTree(c, p+"/"+k)
	}
	_ = c.Delete(p, -1)
}

func TestZKNodeOperationsWorkUnderTheNamespaceAndAreTraced(t *testing.T) {
	ctx, s, ns, traces := nsSession(t)
	raw := zkRaw(t)

	p, err := s.Create(ctx, "/cfg/a", []byte("v0"), WithParents(true))
	require.NoError(t, err)
	assert.Equal(t, "/cfg/a", p, "the path comes back relative to the namespace")
	data, _, err := raw.Get(ns + "/cfg/a")
	require.NoError(t, err, "the node is under the namespace")
	assert.Equal(t, "v0", string(data))
	_, st, err := raw.Get(ns + "/cfg")
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner)

	got, stat, err := s.Get(ctx, "/cfg/a")
	require.NoError(t, err)
	assert.Equal(t, "v0", string(got))
	assert.Equal(t, int32(0), stat.Version)

	stat, err = s.Set(ctx, "/cfg/a", []byte("v1"), WithVersion(0))
	require.NoError(t, err)
	assert.Equal(t, int32(1), stat.Version)
	_, err = s.Set(ctx, "/cfg/a", []byte("v2"), WithVersion(0))
	require.ErrorIs(t, err, ErrBadVersion, "a stale version is refused")
	assert.ErrorIs(t, err, zk.ErrBadVersion, "and still matches go-zookeeper's error")
	assert.Contains(t, err.Error(), "/cfg/a")
	assert.NotContains(t, err.Error(), ns, "the error names the path under the namespace")

	stat, err = s.Exists(ctx, "/cfg/a")
	require.NoError(t, err)
	require.NotNil(t, stat)
	assert.Equal(t, int32(1), stat.Version)
	stat, err = s.Exists(ctx, "/cfg/none")
	require.NoError(t, err)
	assert.Nil(t, stat, "no node: nil Stat, no error")

	kids, stat, err := s.Children(ctx, "/cfg")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, kids)
	assert.Equal(t, int32(1), stat.NumChildren)
	kids, _, err = s.Children(ctx, "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"cfg"}, kids, "/ is the namespace's root")

	require.NoError(t, s.Sync(ctx, "/cfg/a"))
	require.NoError(t, s.Sync(ctx, "/cfg/none"), "a sync needs no node")

	acl, stat, err := s.GetACL(ctx, "/cfg/a")
	require.NoError(t, err)
	assert.Equal(t, OpenACL(), acl)
	_, err = s.SetACL(ctx, "/cfg/a", OpenACL(), WithVersion(1))
	require.ErrorIs(t, err, ErrBadVersion, "SetACL's version is the ACL version")
	readOnly := []ACL{{Perms: PermRead, Scheme: "world", ID: "anyone"}}
	stat, err = s.SetACL(ctx, "/cfg/a", readOnly, WithVersion(stat.Aversion))
	require.NoError(t, err)
	assert.Equal(t, int32(1), stat.Aversion)
	_, err = s.Set(ctx, "/cfg/a", []byte("v3"))
	require.ErrorIs(t, err, ErrNotAuthorized, "the new ACL holds")
	// The node can still be deleted: a delete needs the parent's ACL.

	_, err = s.Create(ctx, "/cfg/a", nil)
	require.ErrorIs(t, err, ErrNodeExists)
	_, err = s.Create(ctx, "/none/a", nil)
	require.ErrorIs(t, err, ErrNoNode, "no parent without WithParents")
	_, _, err = s.Get(ctx, "/cfg/none")
	require.ErrorIs(t, err, ErrNoNode)
	err = s.Delete(ctx, "/cfg")
	require.ErrorIs(t, err, ErrNotEmpty)
	require.NoError(t, s.Delete(ctx, "/cfg/a", WithVersion(1)))
	require.ErrorIs(t, s.Delete(ctx, "/cfg/a"), ErrNoNode)

	ops := map[string]bool{}
	for _, ev := range traces() {
		ops[ev.Op] = true
		assert.True(t, ev.Path == "" || strings.HasPrefix(ev.Path, ns), "traced with the absolute path: %v", ev)
	}
	for _, op := range []string{"create", "createContainer", "getData", "setData", "exists", "getChildren", "sync", "getACL", "setACL", "delete"} {
		assert.True(t, ops[op], "operation %s traced; saw %v", op, ops)
	}
}

func TestZKCreateModes(t *testing.T) {
	ctx, s, ns, _ := nsSession(t)
	raw := zkRaw(t)
	_, err := s.Create(ctx, "/m", nil, WithParents(true))
	require.NoError(t, err)

	p, err := s.Create(ctx, "/m/eph", []byte("e"), WithMode(ModeEphemeral))
	require.NoError(t, err)
	_, st, err := raw.Get(ns + p)
	require.NoError(t, err)
	assert.Equal(t, s.SessionID(), st.EphemeralOwner)
	_, err = s.Create(ctx, "/m/eph/child", nil)
	require.ErrorIs(t, err, ErrNoChildrenForEphemerals)

	p1, err := s.Create(ctx, "/m/seq-", nil, WithMode(ModePersistentSequential))
	require.NoError(t, err)
	p2, err := s.Create(ctx, "/m/seq-", nil, WithMode(ModeEphemeralSequential))
	require.NoError(t, err)
	assert.Regexp(t, `^/m/seq-\d{10}$`, p1)
	assert.Regexp(t, `^/m/seq-\d{10}$`, p2)
	assert.Less(t, p1, p2)

	_, err = s.Create(ctx, "/m/box", nil, WithMode(ModeContainer))
	require.NoError(t, err)
	_, err = s.Create(ctx, "/m/box/x", nil)
	require.NoError(t, err)

	pp, err := s.Create(ctx, "/m/p/lock-", []byte("d"), WithMode(ModeEphemeralSequential), WithProtection(true), WithParents(true))
	require.NoError(t, err)
	assert.Regexp(t, `^/m/p/_c_[0-9a-f-]{36}-lock-\d{10}$`, pp, "Curator's protected name")
	pn, err := s.Create(ctx, "/m/p/cfg", []byte("d"), WithProtection(true))
	require.NoError(t, err)
	assert.Regexp(t, `^/m/p/_c_[0-9a-f-]{36}-cfg$`, pn)
	_, st, err = raw.Get(ns + pn)
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner, "a protected persistent node")

	_, err = s.Create(ctx, "/m/ttl", nil, WithMode(ModePersistentWithTTL), WithTTL(time.Minute))
	if err == nil {
		t.Log("this server creates TTL nodes (extendedTypesEnabled)")
	} else {
		assert.ErrorIs(t, err, ErrTTLUnsupported, "a TTL create is sent, and a server without TTL nodes refuses it so")
	}

	require.NoError(t, s.Delete(ctx, "/m", WithDeleteChildren(true)))
	ok, _, err := raw.Exists(ns + "/m")
	require.NoError(t, err)
	assert.False(t, ok, "deleted with every descendant")
}

// Ephemerals, CountDescendants and WhoAmI are ZooKeeper 3.6+/3.7+
// requests the wire layer sends itself: they work under a namespace and
// leave the connection as it was.
func TestZKTheNewerReads(t *testing.T) {
	ctx, s, ns, traces := nsSession(t, WithDigestAuth("nodeops", "secret"))
	raw := zkRaw(t)
	_, err := raw.Create(ns+"x", nil, 0, zk.WorldACL(zk.PermAll)) // a sibling that shares the namespace's prefix
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Delete(ns+"x/e", -1); _ = raw.Delete(ns+"x", -1) })
	_, err = raw.Create(ns+"x/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)) // another session's
	require.NoError(t, err)

	for _, p := range []string{"/a/e1", "/a/b/e2", "/ab"} {
		_, err := s.Create(ctx, p, nil, WithMode(ModeEphemeral), WithParents(true))
		require.NoError(t, err)
	}
	_, err = s.Create(ctx, "/a/p", nil)
	require.NoError(t, err)
	id := s.SessionID()

	eph, err := s.Ephemerals(ctx, "/")
	require.NoError(t, err)
	sort.Strings(eph)
	assert.Equal(t, []string{"/a/b/e2", "/a/e1", "/ab"}, eph, "this session's ephemeral nodes under the namespace")
	eph, err = s.Ephemerals(ctx, "/a/")
	require.NoError(t, err)
	sort.Strings(eph)
	assert.Equal(t, []string{"/a/b/e2", "/a/e1"}, eph)
	eph, err = s.Ephemerals(ctx, "/a")
	require.NoError(t, err)
	assert.Len(t, eph, 3, "a string prefix: /ab too")

	n, err := s.CountDescendants(ctx, "/a")
	require.NoError(t, err)
	assert.Equal(t, 4, n, "e1, b, b/e2, p")
	n, err = s.CountDescendants(ctx, "/")
	require.NoError(t, err)
	assert.Equal(t, 6, n)
	_, err = s.CountDescendants(ctx, "/none")
	require.ErrorIs(t, err, ErrNoNode)

	ids, err := s.WhoAmI(ctx)
	require.NoError(t, err)
	assert.Contains(t, ids, Identity{Scheme: "digest", ID: "nodeops"})
	assert.True(t, slices.ContainsFunc(ids, func(id Identity) bool {
		ip := net.ParseIP(id.ID)
		return id.Scheme == "ip" && ip != nil && ip.IsLoopback()
	}), "the address it connects from, on loopback: %v", ids)

	assert.Equal(t, id, s.SessionID())
	assert.Equal(t, StateConnected, s.State(), "the connection was not disturbed")
	ops := map[string]bool{}
	for _, ev := range traces() {
		ops[ev.Op] = true
	}
	assert.True(t, ops["getEphemerals"] && ops["getAllChildrenNumber"] && ops["whoAmI"], "traced: %v", ops)
}

// A transaction's paths are relative to the namespace, as the user
// writes them, and a Lease.Check guards it: the fenced write of issue 42
// (it failed with "node does not exist" under WithNamespace).
func TestZKFencedWriteUnderANamespace(t *testing.T) {
	ctx, s, ns, _ := nsSession(t)
	raw := zkRaw(t)
	_, err := s.Create(ctx, "/data", []byte("v0"), WithParents(true))
	require.NoError(t, err)

	lease, err := NewMutex(s, "/locks/data").Acquire(ctx)
	require.NoError(t, err)
	res, err := s.Multi(ctx, lease.Check(), SetOp("/data", []byte("v1")), CreateOp("/data-", []byte("log"), WithMode(ModePersistentSequential)))
	require.NoError(t, err, "the fenced write goes through while the lock is held")
	require.Len(t, res, 3)
	assert.Equal(t, OpCheck, res[0].Kind)
	assert.Equal(t, lease.Path(), res[0].Path)
	assert.Equal(t, int32(1), res[1].Stat.Version)
	assert.Regexp(t, `^/data-\d{10}$`, res[2].Path)
	data, _, err := raw.Get(ns + "/data")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(data))

	require.NoError(t, lease.Release(ctx))
	res, err = s.Multi(ctx, lease.Check(), SetOp("/data", []byte("v2")))
	require.ErrorIs(t, err, ErrLockLost, "refused once the lock node is gone")
	require.ErrorIs(t, err, ErrNoNode)
	require.Len(t, res, 2)
	assert.ErrorIs(t, res[0].Err, ErrLockLost)
	assert.ErrorIs(t, res[1].Err, ErrTxnAborted)
	data, _, err = raw.Get(ns + "/data")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(data), "nothing applied")

	_, err = s.Multi(ctx, CheckOp("/data", WithVersion(1)), SetOp("/data", []byte("v3"), WithVersion(0)))
	require.ErrorIs(t, err, ErrBadVersion)
	res, err = s.Multi(ctx, CheckOp("/data", WithVersion(1)), DeleteOp("/data", WithVersion(1)))
	require.NoError(t, err)
	assert.Nil(t, res[1].Err)
	ok, _, _ := raw.Exists(ns + "/data")
	assert.False(t, ok)
}

// A negative expected version (one a node reaches after 2^31-1 writes)
// is sent and judged by the server: here, whose node is at version 1, it
// answers BadVersion.
func TestZKTrySetSendsANegativeVersionToTheServer(t *testing.T) {
	var mu sync.Mutex
	var sets []error
	ctx, s := zkSession(t, 30*time.Second, WithTracer(TracerFunc(func(ev TraceEvent) {
		if ev.Op == "setData" {
			mu.Lock()
			sets = append(sets, ev.Err)
			mu.Unlock()
		}
	})))
	raw := zkRaw(t)
	path := "/zkt/wrapped-" + newUUID()
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	c := NewSharedCount(s, path, 1)
	_, err := c.Set(ctx, 2)
	require.NoError(t, err)
	mu.Lock()
	sets = nil // what the seed's creation took
	mu.Unlock()

	for _, v := range []int32{-2, math.MinInt32} {
		_, err := c.TrySet(ctx, 3, v)
		require.ErrorIs(t, err, ErrVersionChanged, "version %d", v)
	}
	_, err = NewSharedValue(s, path, nil).TrySet(ctx, []byte{0, 0, 0, 3}, -7)
	require.ErrorIs(t, err, ErrVersionChanged)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sets, 3, "the three versioned writes were sent")
	for _, e := range sets {
		assert.True(t, errors.Is(e, zk.ErrBadVersion), "the server answered BadVersion: %v", e)
	}
}

// opRecorder is an Observer that records each request's operation and
// path, and whether it came under the caller's ctx (marked with key).
type opRecorder struct {
	BaseObserver
	mu  sync.Mutex
	ops []string
}

type ctxKey struct{}

func (o *opRecorder) OpDone(ctx context.Context, ev OpEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops = append(o.ops, fmt.Sprintf("%s %s %v", ev.Op, ev.Path, ctx.Value(ctxKey{})))
}

// The Observer sees each node operation's requests with the path under
// the namespace and the caller's ctx.
func TestZKNodeOperationsAreObservedUnderTheCallersCtx(t *testing.T) {
	rec := &opRecorder{}
	ctx, s, _, _ := nsSession(t, WithObserver(rec))
	ctx = context.WithValue(ctx, ctxKey{}, "caller")
	_, err := s.Create(ctx, "/o", []byte("x"), WithParents(true))
	require.NoError(t, err)
	_, err = s.Set(ctx, "/o", []byte("y"))
	require.NoError(t, err)
	_, err = s.Multi(ctx, CheckOp("/o"), DeleteOp("/o"))
	require.NoError(t, err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Contains(t, rec.ops, "create /o caller")
	assert.Contains(t, rec.ops, "setData /o caller")
	assert.Contains(t, rec.ops, "multi /o caller")
}
