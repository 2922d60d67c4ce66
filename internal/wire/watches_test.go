package wire

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A watch taken off before its AddWatch ran is never set, and taking off a
// watch that is not set sends nothing: a PersistentWatch closed while its
// Start is on its way leaves nothing on the server.
func TestWatchRemovedBeforeItsAddIsNeverSetAndNothingIsSent(t *testing.T) {
	s := startNodeServer(t, "/a")
	l, zc := connectTo(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &Watch{Path: "/a"}

	code, err := l.RemoveWatch(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, int32(CodeOK), code)
	_, err = l.AddWatch(ctx, w)
	require.ErrorIs(t, err, ErrRemoved)
	assert.Empty(t, l.registered(), "the watch is not registered, so no connection sets it again")

	// A request after them: any frame they wrote reached the server first.
	_, _, err = zc.Exists("/a")
	require.NoError(t, err)
	s.mu.Lock()
	ops := append([]int32(nil), s.ops...)
	s.mu.Unlock()
	assert.NotContains(t, ops, addWatchOp.Load())
	assert.NotContains(t, ops, int32(OpRemoveWatches))
	assert.Contains(t, ops, int32(opExists), "the server's log works")
}

// A watch added, then taken off, is removed behind its add.
func TestWatchAddedThenRemovedIsRemovedBehindItsAdd(t *testing.T) {
	s := startNodeServer(t, "/a")
	l, _ := connectTo(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := &Watch{Path: "/a"}
	code, err := l.AddWatch(ctx, w)
	require.NoError(t, err)
	require.Equal(t, int32(CodeOK), code)
	code, err = l.RemoveWatch(ctx, w)
	require.NoError(t, err)
	require.Equal(t, int32(CodeOK), code)
	s.mu.Lock()
	ops := append([]int32(nil), s.ops...)
	s.mu.Unlock()
	add, remove := -1, -1
	for i, op := range ops {
		switch op {
		case addWatchOp.Load():
			add = i
		case OpRemoveWatches:
			remove = i
		}
	}
	require.GreaterOrEqual(t, add, 0, "addWatch sent: %v", ops)
	assert.Greater(t, remove, add, "removeWatches sent behind it: %v", ops)
}
