package zkrecipes

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A transaction cut off from its reply is settled once connected again:
// a versioned set is known not applied while its node is still at that
// version, and is sent again. The sync that settling starts with can be
// cut off too; it is tried again rather than leaving the outcome unknown.
func TestZKTransactionIsSentAgainWhenTheSyncSettlingItIsCutOff(t *testing.T) {
	d := &requestDropper{}
	ctx, s := d.session(t, 30*time.Second)
	p := "/zkt/settle-" + newUUID()
	_, err := s.Create(ctx, p, []byte("0"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Delete(context.Background(), p) })

	d.dropNext(opMulti, 1)
	d.dropNext(opSync, 1)
	res, err := s.Multi(ctx, SetOp(p, []byte("1"), WithVersion(0)))
	require.NoError(t, err, "the set was not applied and its node had not moved: it must be sent again")
	require.Zero(t, d.left(opMulti)+d.left(opSync), "the transaction and the sync settling it were cut off")
	require.Len(t, res, 1)
	data, st, err := s.Get(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "1", string(data))
	require.Equal(t, int32(1), st.Version, "applied once")
}

// A Release cut off from its reply, whose settling is cut off too, puts
// the item back once and leaves no lock: the robustness suite saw such a
// Release fail with ErrItemLost though nothing had changed the item, and
// the same consumer take the item again while the old lock was still
// being cleaned up.
func TestZKWorkItemReleaseCutOffTwiceRequeuesTheItemOnce(t *testing.T) {
	for _, policy := range []struct {
		name string
		opt  SessionOption
	}{
		{"settled by the Session", WithRetryPolicy(ExponentialBackoff(10*time.Millisecond, 100*time.Millisecond))},
		// Too short a policy for the Session's settling to outlast the
		// cut-off syncs: the WorkItem finds the item unchanged itself.
		{"settled by the WorkItem", WithRetryPolicy(BoundedExponentialBackoff(10*time.Millisecond, 10*time.Millisecond, time.Millisecond))},
	} {
		t.Run(policy.name, func(t *testing.T) {
			d := &requestDropper{}
			ctx, s := d.session(t, 30*time.Second, policy.opt)
			path := "/zkt/release-cut-" + newUUID()
			t.Cleanup(func() {
				_ = s.Delete(context.Background(), path, WithDeleteChildren(true))
				_ = s.Delete(context.Background(), path+"-locks", WithDeleteChildren(true))
			})
			q := NewWorkQueue(s, path)
			require.NoError(t, q.Put(ctx, []byte("one")))
			wi, err := q.Take(ctx)
			require.NoError(t, err)

			d.dropNext(opMulti, 1)
			d.dropNext(opSync, 3)
			require.NoError(t, wi.Release(ctx), "nothing changed the item: the Release must go through")
			require.Zero(t, d.left(opMulti), "the Release's transaction was cut off")
			require.Less(t, d.left(opSync), 3, "its settling was cut off")
			d.stopDropping(opSync)
			kids, _, err := s.Children(ctx, path)
			require.NoError(t, err)
			require.Len(t, kids, 1, "the item is back once: %q", kids)
			require.NotEqual(t, wi.Name(), kids[0], "under a new name")
			locks, _, err := s.Children(ctx, path+"-locks")
			require.NoError(t, err)
			require.Empty(t, locks, "no lock left")
		})
	}
}
