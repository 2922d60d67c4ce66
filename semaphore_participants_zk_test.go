package zkrecipes

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestZKSemaphoreParticipantsListsHoldersThenTheWaiterAndAvailableCountsThem(t *testing.T) {
	ctx, sa := zkSession(t, 30*time.Second)
	_, sb := zkSession(t, 30*time.Second)
	_, sc := zkSession(t, 30*time.Second)
	path := "/zkt/semparts-" + newUUID()
	a := NewSemaphore(sa, path, 2, WithNodeData([]byte("a")))
	b := NewSemaphore(sb, path, 2, WithNodeData([]byte("b")))
	c := NewSemaphore(sc, path, 2, WithNodeData([]byte("c")))

	ps, err := a.Participants(ctx)
	require.NoError(t, err)
	assert.Empty(t, ps, "a path that does not exist has no participants")
	free, err := c.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, free)

	la, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	lb, err := b.Acquire(ctx, 1)
	require.NoError(t, err)
	free, err = c.Available(ctx)
	require.NoError(t, err)
	assert.Zero(t, free)

	ps, err = c.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, []byte("a"), ps[0].Data)
	assert.Equal(t, sa.SessionID(), ps[0].SessionID)
	assert.Equal(t, la[0].Token(), ps[0].Token)
	assert.Equal(t, baseName(la[0].Path()), ps[0].Node)
	assert.Equal(t, []byte("b"), ps[1].Data)
	assert.Equal(t, sb.SessionID(), ps[1].SessionID)
	assert.True(t, ps[0].Holder && ps[1].Holder)

	got := make(chan error, 1)
	var lc []*Lease
	go func() {
		var err error
		lc, err = c.Acquire(ctx, 1)
		got <- err
	}()
	require.Eventually(t, func() bool {
		ps, err = a.Participants(ctx)
		return err == nil && len(ps) == 3
	}, 10*time.Second, 10*time.Millisecond, "the waiter's lease node is listed")
	assert.Equal(t, []byte("c"), ps[2].Data)
	assert.False(t, ps[2].Holder, "the lease node beyond the maximum is the waiter's")
	free, err = a.Available(ctx)
	require.NoError(t, err)
	assert.Zero(t, free, "never below zero")

	require.NoError(t, la[0].Release(ctx))
	require.NoError(t, <-got)
	ps, err = a.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, []byte("b"), ps[0].Data)
	assert.Equal(t, []byte("c"), ps[1].Data)
	assert.True(t, ps[1].Holder)

	require.NoError(t, lb[0].Release(ctx))
	require.NoError(t, lc[0].Release(ctx))
	free, err = a.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, free)
}

func TestZKSemaphoreAvailableReadsTheSharedCountWithoutCreatingIt(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/semcount-" + newUUID()
	countPath := path + "-count"
	sem := NewSemaphore(s, path, 3, WithSharedCount(countPath))

	free, err := sem.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, free, "the seed while the count node does not exist")
	ok, _, err := raw.Exists(countPath)
	require.NoError(t, err)
	assert.False(t, ok, "Available does not create the count node")

	leases, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)
	free, err = sem.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, free)

	_, err = raw.Set(countPath, binary.BigEndian.AppendUint32(nil, 5), -1)
	require.NoError(t, err)
	free, err = sem.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, free, "a raised count frees permits")

	_, err = raw.Set(countPath, binary.BigEndian.AppendUint32(nil, 1), -1)
	require.NoError(t, err)
	free, err = sem.Available(ctx)
	require.NoError(t, err)
	assert.Zero(t, free, "a lowered count leaves none, never a negative number")
	ps, err := sem.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.True(t, ps[0].Holder)
	assert.False(t, ps[1].Holder, "only the oldest count are marked")

	_, err = raw.Set(countPath, []byte{1, 2, 3}, -1)
	require.NoError(t, err)
	_, err = sem.Available(ctx)
	assert.ErrorIs(t, err, ErrBadCount)
	_, err = sem.Participants(ctx)
	assert.ErrorIs(t, err, ErrBadCount)

	for _, l := range leases {
		require.NoError(t, l.Release(ctx))
	}
	require.NoError(t, raw.Delete(countPath, -1))
}
