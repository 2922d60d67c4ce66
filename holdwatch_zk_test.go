package zkrecipes

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdwatch.go relies on go-zookeeper calling the event callback with a
// watch notification before it delivers it to the watch's channel, on one
// goroutine. This fails if a go-zookeeper upgrade changes that order.
func TestZKEventCallbackSeesANotificationBeforeItsWatchChannel(t *testing.T) {
	path := "/zkt/callback-order-" + newUUID()
	var seen atomic.Value // the path of the last NodeDeleted the callback saw
	seen.Store("")
	c, _, err := zk.Connect(zkServers(t), 10*time.Second, zk.WithLogInfo(false), zk.WithEventCallback(func(ev zk.Event) {
		if ev.Type == zk.EventNodeDeleted {
			seen.Store(ev.Path)
		}
	}))
	require.NoError(t, err)
	defer c.Close()
	raw := zkRaw(t)
	for i := range 20 {
		p := fmt.Sprintf("%s-%d", path, i)
		_, err := raw.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		_, _, w, err := c.ChildrenW(p)
		require.NoError(t, err)
		require.NoError(t, raw.Delete(p, -1))
		select {
		case ev := <-w:
			require.Equal(t, zk.EventNodeDeleted, ev.Type)
			require.Equal(t, p, seen.Load(), "the callback saw the deletion before the watch channel got it")
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
		}
	}
}

// Idle held leases cost no goroutine each: the Session's event callback
// watches them all, and still ends each lease whose node is deleted.
func TestZKHeldLeasesCostNoGoroutineAndStillEndOnDeletion(t *testing.T) {
	setForTest(t, &selfWatchGrace, time.Millisecond) // every hold sets its watch at once
	ctx, s := zkSession(t, 60*time.Second)
	raw := zkRaw(t)
	dir := "/zkt/many-held-" + newUUID()
	base := runtime.NumGoroutine()

	const n = 200
	leases := make([]*Lease, n)
	for i := range leases {
		l, err := NewMutex(s, fmt.Sprintf("%s/%d", dir, i)).Acquire(ctx)
		require.NoError(t, err)
		leases[i] = l
	}
	// Each hold sets its watch on a short-lived goroutine that ends once the
	// watch is set; then none is left, and every deletion below reaches the
	// Session's callback.
	if !assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= base+n/20 }, 20*time.Second, 10*time.Millisecond) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d with %d leases held:\n%s", base, runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
	}
	for _, l := range leases {
		require.NoError(t, raw.Delete(l.Path(), -1))
	}
	for i, l := range leases {
		select {
		case <-l.Done():
			assert.ErrorIs(t, l.Err(), ErrNodeDeleted, "lease %d", i)
		case <-ctx.Done():
			t.Fatalf("lease %d did not end after its node was deleted", i)
		}
	}
	assert.Zero(t, s.held.size(), "no ended hold stays registered")
}

// A Session adopted with NewSession gets its events through a channel, too
// late for the callback's order: its holds keep a goroutine on their watch,
// and a deleted node still ends its lease.
func TestZKAdoptedSessionLeaseEndsWhenItsNodeIsDeleted(t *testing.T) {
	setForTest(t, &selfWatchGrace, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, events, err := zk.Connect(zkServers(t), 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	s, err := NewSession(ctx, conn, events, WithSessionTimeout(10*time.Second))
	require.NoError(t, err)
	defer s.Close()
	raw := zkRaw(t)

	for _, waited := range []bool{false, true} {
		dir := "/zkt/adopted-deleted-" + newUUID()
		m := NewMutex(s, dir)
		if waited {
			first, err := NewMutex(zkSessionOnly(t), dir).Acquire(ctx)
			require.NoError(t, err)
			got := make(chan *Lease, 1)
			go func() {
				l, err := m.Acquire(ctx)
				assert.NoError(t, err)
				got <- l
			}()
			require.Eventually(t, func() bool {
				kids, _, err := raw.Children(dir)
				return err == nil && len(kids) == 2
			}, 10*time.Second, time.Millisecond)
			require.NoError(t, first.Release(ctx))
			l := <-got
			require.NotNil(t, l)
			require.NoError(t, raw.Delete(l.Path(), -1))
			awaitLoss(ctx, t, l)
			continue
		}
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, raw.Delete(l.Path(), -1))
		awaitLoss(ctx, t, l)
	}
}

func awaitLoss(ctx context.Context, t *testing.T, l *Lease) {
	t.Helper()
	select {
	case <-l.Done():
		assert.ErrorIs(t, l.Err(), ErrNodeDeleted)
	case <-ctx.Done():
		t.Fatal("the lease did not end after its node was deleted")
	}
}

func zkSessionOnly(t *testing.T) *Session {
	t.Helper()
	_, s := zkSession(t, 30*time.Second)
	return s
}
