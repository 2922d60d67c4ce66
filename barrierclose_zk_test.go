package zkrecipes

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// adoptedSession returns a Session over a connection the test made and
// keeps open (Session.Close leaves it open, so its watches never fire),
// and a channel that receives each data watch the Session sets.
func adoptedSession(t *testing.T) (context.Context, *Session, <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, events, err := zk.Connect(zkServers(t), 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	watched := make(chan struct{}, 16)
	s, err := NewSession(ctx, conn, events, WithSessionTimeout(10*time.Second),
		WithTracer(TracerFunc(func(ev TraceEvent) {
			if ev.Op == "getData" && ev.Err == nil {
				select {
				case watched <- struct{}{}:
				default:
				}
			}
		})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return ctx, s, watched
}

// returnsOnClose runs wait on a goroutine, closes s once wait has set its
// watch, and requires wait to return ErrClosed promptly.
func returnsOnClose(t *testing.T, s *Session, watched <-chan struct{}, wait func() error) {
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case <-watched:
	case err := <-done:
		t.Fatalf("returned before Close: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("set no watch in 10s")
	}
	require.NoError(t, s.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5s after Session.Close")
	}
}

// Both failed before the waits selected on the Session's close: they
// hung until ctx ended.

func TestZKBarrierWaitOnAnAdoptedConnectionEndsWithErrClosedOnClose(t *testing.T) {
	ctx, s, watched := adoptedSession(t)
	path := "/zkt/barrier-" + newUUID()
	b := NewBarrier(s, path)
	require.NoError(t, b.Set(ctx))
	t.Cleanup(func() { _ = zkRaw(t).Delete(path, -1) })

	returnsOnClose(t, s, watched, func() error { return b.Wait(context.Background()) })
}

func TestZKDoubleBarrierLeaveOnAnAdoptedConnectionEndsWithErrClosedOnClose(t *testing.T) {
	ctx, s, watched := adoptedSession(t)
	_, other := zkSession(t, 30*time.Second)
	path := "/zkt/dbarrier-" + newUUID()
	a, b := NewDoubleBarrier(s, path, 2), NewDoubleBarrier(other, path, 2)
	entered := make(chan error, 1)
	go func() { entered <- b.Enter(ctx) }()
	require.NoError(t, a.Enter(ctx))
	require.NoError(t, <-entered)
	// b never leaves: a waits for it, whichever of the two nodes is lower.
	t.Cleanup(func() { _ = zkRaw(t).Delete(joinPath(b.dir, readyNode), -1) })

	returnsOnClose(t, s, watched, func() error { return a.Leave(context.Background()) })
}
