package recipes_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// Node data is never null (the server's data_len -1): Curator's readers
// fail on a null where Curator itself writes bytes (its GroupMember's
// cache, for one), so nil given for data is written as 0 bytes, and the
// containers the library makes hold 0 bytes, as Curator's do.

// zeroBytes asserts that the node at p holds 0 bytes of data, not null:
// go-zookeeper reads a null (length -1) as a nil slice and 0 bytes as an
// empty non-nil one.
func zeroBytes(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	data, st, err := conn.Get(p)
	require.NoError(t, err, p)
	assert.NotNil(t, data, "%s holds null data, not 0 bytes", p)
	assert.Empty(t, data, p)
	assert.Zero(t, st.DataLength, p)
}

// onlyChild returns the path of dir's one child.
func onlyChild(t *testing.T, conn *zk.Conn, dir string) string {
	t.Helper()
	kids := children(t, conn, dir)
	require.Len(t, kids, 1, dir)
	return dir + "/" + kids[0]
}

func TestNodeData_NilIsWrittenAsZeroBytesAndContainersHoldZeroBytes(t *testing.T) {
	s := connect(t, server(t), nil).Session
	conn := raw(t, server(t))
	ctx := ctxT(t, time.Minute)
	base := testPath(t)

	// PersistentNode with nil data, under two containers it makes.
	pn := zr.NewPersistentNode(s, base+"/a/b/pn", nil)
	require.NoError(t, pn.Start(ctx))
	defer pn.Close(context.Background())
	require.NoError(t, pn.WaitInPlace(ctx))
	for _, p := range []string{base, base + "/a", base + "/a/b", base + "/a/b/pn"} {
		zeroBytes(t, conn, p)
	}

	// PersistentNode.SetData(nil) over data.
	set := zr.NewPersistentNode(s, base+"/set", []byte("x"))
	require.NoError(t, set.Start(ctx))
	defer set.Close(context.Background())
	require.NoError(t, set.WaitInPlace(ctx))
	require.NoError(t, set.SetData(ctx, nil))
	zeroBytes(t, conn, base+"/set")

	// A lock with WithNodeData(nil): its node and its container.
	l, err := zr.NewMutex(s, base+"/lock/m", zr.WithNodeData(nil)).Acquire(ctx)
	require.NoError(t, err)
	zeroBytes(t, conn, base+"/lock")
	zeroBytes(t, conn, base+"/lock/m")
	zeroBytes(t, conn, onlyChild(t, conn, base+"/lock/m"))
	require.NoError(t, l.Release(ctx))

	// A barrier with WithBarrierData(nil), under a container.
	barrier := zr.NewBarrier(s, base+"/barrier/b", zr.WithBarrierData(nil))
	require.NoError(t, barrier.Set(ctx))
	zeroBytes(t, conn, base+"/barrier")
	zeroBytes(t, conn, base+"/barrier/b")
	require.NoError(t, barrier.Remove(ctx))

	// An empty queue item (Offer refuses nil), and the queue's container.
	q := zr.NewQueue(s, base+"/queue")
	require.NoError(t, q.Offer(ctx, []byte{}))
	zeroBytes(t, conn, base+"/queue")
	zeroBytes(t, conn, onlyChild(t, conn, base+"/queue"))
	item, err := q.Poll(ctx)
	require.NoError(t, err)
	assert.Empty(t, item)

	// A shared value seeded with nil, then set to nil over data.
	v := zr.NewSharedValue(s, base+"/shared/v", nil)
	got, err := v.Get(ctx)
	require.NoError(t, err)
	assert.Empty(t, got.Value)
	zeroBytes(t, conn, base+"/shared")
	zeroBytes(t, conn, base+"/shared/v")
	_, err = v.Set(ctx, []byte("x"))
	require.NoError(t, err)
	_, err = v.Set(ctx, nil)
	require.NoError(t, err)
	zeroBytes(t, conn, base+"/shared/v")
	require.NoError(t, conn.Delete(base+"/shared/v", -1))

	// A group member's SetData(nil), and the group's container.
	g := zr.NewGroupMember(s, base+"/group", "m", []byte("x"))
	require.NoError(t, g.Start(ctx))
	defer g.Close(context.Background())
	require.NoError(t, g.WaitInPlace(ctx))
	require.NoError(t, g.SetData(ctx, nil))
	zeroBytes(t, conn, base+"/group")
	zeroBytes(t, conn, base+"/group/m")

	// A leader's Proclaim(nil).
	e := zr.NewElection(s, base+"/election", zr.WithLayout(zr.SelectorLayout))
	lead, err := e.Campaign(ctx)
	require.NoError(t, err)
	require.NoError(t, e.Proclaim(ctx, lead, nil))
	zeroBytes(t, conn, onlyChild(t, conn, base+"/election"))
	require.NoError(t, lead.Release(ctx))
}

// A GroupMember made without data (nil) holds this host's address, as a
// Curator GroupMember made without a payload does, never null: a Curator
// 5.4 GroupMember of the same group loads it (a null fails its whole
// member list with a NullPointerException).
func TestInterop_GroupMemberWithoutDataJoinsCuratorsGroup(t *testing.T) {
	path := testPath(t)
	cur := startCuratorView(t)
	s := connect(t, server(t), nil)
	ctx := ctxT(t, time.Minute)

	g := zr.NewGroupMember(s.Session, path, "go", nil)
	require.NoError(t, g.Start(ctx))
	defer g.Close(context.Background())
	require.NoError(t, g.WaitInPlace(ctx))
	cur.ask(t, "OK", "join", path, "java", "j1")

	data, _, err := raw(t, server(t)).Get(path + "/go")
	require.NoError(t, err)
	curatorMembers(t, cur, path, 10*time.Second, "go="+string(data), "java=j1")
	assert.NotNil(t, net.ParseIP(string(data)), "the Go member holds an address: %q", data)
	awaitMembers(t, g, 10*time.Second, map[string]string{"go": string(data), "java": "j1"})
	cur.ask(t, "OK", "leave", path)
}
