package recipes_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// multi is a MultiLock over one lock of each kind, in a fixed order.
func multi(s *zr.Session, path string) *zr.MultiLock {
	return zr.NewMultiLock(
		zr.NewMutex(s, path+"/a"),
		zr.NewRWMutex(s, path+"/b").WriteLock(),
		zr.NewSemaphoreMutex(s, path+"/c"),
	)
}

var multiLockRecipe = recipe{
	name: "MultiLock",
	make: func(s *zr.Session, path string) locker { return multi(s, path) },
	dir:  func(path string) string { return path + "/a" },
	extra: func(path string) []string {
		return []string{path + "/b", path + "/c/locks", path + "/c/leases"}
	},
}

func TestMultiLockContract(t *testing.T) { runExclusiveContract(t, multiLockRecipe) }

func TestMultiLock_CompositeLeaseCoversEveryMember(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	l, err := multi(cl.Session, path).Acquire(ctx)
	require.NoError(t, err)
	ms := l.Members()
	require.Len(t, ms, 3)
	for i, m := range ms {
		assert.NoError(t, m.Err())
		if i > 0 {
			assert.Greater(t, m.Token(), ms[i-1].Token(), "members are acquired in order")
		}
	}
	assert.Equal(t, ms[2].Token(), l.Token(), "the composite token is the newest member's")
	assert.Equal(t, ms[2].Path(), l.Path())
	assert.Nil(t, ms[0].Members())
	require.NoError(t, l.Release(ctx))
	for _, m := range ms {
		assert.ErrorIs(t, m.Err(), zr.ErrReleased)
	}
	assert.Empty(t, multiLockRecipe.nodes(t, conn, path))
}

func TestMultiLock_RollsBackWhenAMemberCannotBeTaken(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	other := connect(t, c, nil)
	b, err := zr.NewRWMutex(other.Session, path+"/b").WriteLock().Acquire(ctx)
	require.NoError(t, err)
	cl := connect(t, c, nil)

	_, err = multi(cl.Session, path).TryAcquire(ctx)
	assert.ErrorIs(t, err, zr.ErrLocked)
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = multi(cl.Session, path).Acquire(dctx)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// The first member was taken and given back: nothing of cl is left.
	assert.Zero(t, ownedBy(t, conn, path+"/a", cl.SessionID()))
	a, err := zr.NewMutex(other.Session, path+"/a").TryAcquire(ctx)
	require.NoError(t, err, "the rolled-back member is free")
	require.NoError(t, a.Release(ctx))
	require.NoError(t, b.Release(ctx))
}

// Losing one member loses the whole and gives the others back.
func TestMultiLock_LostWhenAnyMemberIsLost(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	l, err := multi(cl.Session, path).Acquire(ctx)
	require.NoError(t, err)
	first := l.Members()[0]
	require.NoError(t, conn.Delete(zkPath(cl.Session, first.Path()), -1))
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("composite lease not told")
	}
	assert.ErrorIs(t, l.Err(), zr.ErrLockLost)
	assert.ErrorIs(t, l.Err(), zr.ErrNodeDeleted)
	assert.Empty(t, multiLockRecipe.nodes(t, conn, path), "the other members were released")
	assert.ErrorIs(t, l.Release(ctx), zr.ErrLockLost)
}

func TestMultiLock_BadArguments(t *testing.T) {
	ctx := ctxT(t, 5*time.Second)
	_, err := zr.NewMultiLock().Acquire(ctx)
	assert.ErrorIs(t, err, zr.ErrInvalidArgument)
	_, err = zr.NewMultiLock(nil).Acquire(ctx)
	assert.ErrorIs(t, err, zr.ErrInvalidArgument)
}
