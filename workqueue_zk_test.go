package zkrecipes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A take that reaches a name of its listing whose item another consumer
// acked since (a name of an older listing, among many consumers) spends
// one request on it, and leaves no lock: the lock's create and a check of
// the item are one transaction. A name whose item is there is locked as
// before.
func TestZKWorkQueueNameWhoseItemIsGoneCostsOneRequestAndLeavesNoLock(t *testing.T) {
	rec := &opRecorder{}
	ctx, s := zkSession(t, time.Minute, WithObserver(rec))
	path := "/zkt/" + t.Name()
	t.Cleanup(func() {
		_ = s.Delete(context.Background(), path, WithDeleteChildren(true))
		_ = s.Delete(context.Background(), path+"-locks", WithDeleteChildren(true))
	})
	q := NewWorkQueue(s, path)
	require.NoError(t, q.Put(ctx, []byte("one")))
	kids, _, err := s.Children(ctx, path)
	require.NoError(t, err)
	require.Len(t, kids, 1)
	name := kids[0]
	_, err = q.lock(ctx, "queue-9999999999") // no such item; the lock path is made first
	require.ErrorIs(t, err, errItemGone)
	before := len(rec.recorded())

	_, err = q.lock(ctx, "queue-9999999998")
	require.ErrorIs(t, err, errItemGone)
	ops := rec.recorded()[before:]
	require.Len(t, ops, 1, "one request for a name whose item is gone: %q", ops)
	assert.True(t, strings.HasPrefix(ops[0], "multi "), ops[0])
	locks, _, err := s.Children(ctx, path+"-locks")
	require.NoError(t, err)
	assert.Empty(t, locks, "no lock left")

	wi, err := q.lock(ctx, name)
	require.NoError(t, err)
	require.NotNil(t, wi)
	assert.Equal(t, "one", strings.Join(itemStrings(wi), ","))
	locks, _, err = s.Children(ctx, path+"-locks")
	require.NoError(t, err)
	assert.Equal(t, []string{name}, locks)
	require.NoError(t, wi.Ack(ctx))
}

func itemStrings(wi *WorkItem) []string {
	var out []string
	for _, it := range wi.Items() {
		out = append(out, string(it))
	}
	return out
}

func (o *opRecorder) recorded() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.ops...)
}
