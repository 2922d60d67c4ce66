package zkrecipes

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Revoke refuses a node that still waits (a revocation request written
// into it, followed by its contender giving up, could pass for a marked
// release to the waiter behind it), and the waiter behind a waiting node
// that goes does not take the lock while the holder still holds it.
func TestZKRevokeRefusesAWaitingNodeAndItsWaiterWaitsOn(t *testing.T) {
	for i := range 10 {
		ctx, s1 := zkSession(t, 30*time.Second)
		var mu sync.Mutex
		var ops []string
		tracer := TracerFunc(func(ev TraceEvent) {
			mu.Lock()
			defer mu.Unlock()
			ops = append(ops, ev.Op+" "+ev.Path)
		})
		seen := func(op string) bool {
			mu.Lock()
			defer mu.Unlock()
			for _, o := range ops {
				if o == op {
					return true
				}
			}
			return false
		}
		_, s2 := zkSession(t, 30*time.Second, WithTracer(tracer))
		raw := zkRaw(t)
		dir := "/zkt/revoked-waiter-" + newUUID()

		holder, err := NewMutex(s1, dir).Acquire(ctx)
		require.NoError(t, err)
		// A foreign contender (as a Curator process would be) behind the
		// holder, and our waiter behind it.
		foreign, err := raw.Create(joinPath(dir, protectedName(newUUID(), "lock-")), nil,
			zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		type result struct {
			l   *Lease
			err error
		}
		got := make(chan result, 1)
		go func() {
			l, err := NewMutex(s2, dir).Acquire(ctx)
			got <- result{l, err}
		}()
		require.Eventually(t, func() bool { return seen("getData " + foreign) }, 10*time.Second, time.Millisecond,
			"the waiter watches the foreign node")
		mu.Lock()
		ops = nil // from here on, a listing is the waiter's after the deletion
		mu.Unlock()

		require.ErrorIs(t, Revoke(ctx, s1, strings.TrimPrefix(foreign, s1.Namespace())), ErrNotHolder)
		data, _, err := raw.Get(foreign)
		require.NoError(t, err)
		require.Empty(t, data, "a refused revocation writes nothing")
		require.NoError(t, Revoke(ctx, s1, holder.Path()), "a holder can be revoked")
		require.NoError(t, raw.Delete(foreign, -1))

		// The waiter lists again (a plain deletion) or, wrongly, takes the
		// lock at once.
		var r result
		returned := false
		require.Eventually(t, func() bool {
			select {
			case r = <-got:
				returned = true
				return true
			default:
				return seen("getChildren " + dir)
			}
		}, 10*time.Second, time.Millisecond)
		require.False(t, returned, "round %d: the waiter took the lock while the holder held it (err %v)", i, r.err)
		assert.NoError(t, holder.Err())

		require.NoError(t, holder.Release(ctx))
		select {
		case r = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the waiter did not get the lock once the holder released it", i)
		}
		require.NoError(t, r.err)
		assert.Greater(t, r.l.Token(), holder.Token())
		require.NoError(t, r.l.Release(ctx))
	}
}
