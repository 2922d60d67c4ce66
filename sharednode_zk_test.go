package zkrecipes

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// giveUpOnCreate is a Tracer that holds the create of path, which the
// server has made by then (a create that failed passes), until free: it cancels the caller's ctx first,
// so the caller has given up before the reply is handed over.
type giveUpOnCreate struct {
	mu      sync.Mutex
	path    string
	cancel  context.CancelFunc
	release chan struct{}
	once    sync.Once
}

func (g *giveUpOnCreate) TraceOp(ev TraceEvent) {
	g.mu.Lock()
	cancel := g.cancel
	hit := ev.Op == "create" && ev.Err == nil && ev.Path == g.path && cancel != nil
	if hit {
		g.cancel = nil
	}
	g.mu.Unlock()
	if hit {
		cancel()
		<-g.release
	}
}

// arm makes the next create of path (absolute) cancel the context
// returned.
func (g *giveUpOnCreate) arm(t *testing.T, path string) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g.mu.Lock()
	g.path, g.cancel = path, cancel
	g.mu.Unlock()
	return ctx
}

func (g *giveUpOnCreate) free() { g.once.Do(func() { close(g.release) }) }

// sharedNodeSessions returns a Session whose armed create gives up (a),
// and a plain one (b) with its context.
func sharedNodeSessions(t *testing.T) (*giveUpOnCreate, *Session, context.Context, *Session) {
	g := &giveUpOnCreate{release: make(chan struct{})}
	_, a := zkSession(t, 30*time.Second, WithTracer(g))
	t.Cleanup(g.free) // runs before a's Close
	ctx, b := zkSession(t, 30*time.Second)
	return g, a, ctx, b
}

// A shared node whose creator gave up after sending the create stays:
// another client may have built on it meanwhile. These tests failed
// before createShared, when the create's abandon step deleted the node in
// the background and the other client's update was lost.

func TestZKAtomicCounterCreateWhoseCallerGaveUpIsNotUndone(t *testing.T) {
	g, a, ctx, b := sharedNodeSessions(t)
	path := "/zkt/shared-" + newUUID() + "/n"

	_, err := NewAtomicCounter(a, path).Add(g.arm(t, path), 1)
	require.ErrorIs(t, err, context.Canceled)
	r, err := NewAtomicCounter(b, path).Add(ctx, 5)
	require.NoError(t, err)
	assert.Equal(t, AtomicResult{Succeeded: true, PreValue: 1, PostValue: 6}, r)
	g.free()

	require.Never(t, func() bool {
		v, err := NewAtomicCounter(b, path).Get(ctx)
		return err != nil || v != 6
	}, time.Second, 20*time.Millisecond, "B's update must not be lost")
	require.NoError(t, b.Conn().Delete(path, -1))
}

func TestZKSharedCountCreateWhoseCallerGaveUpIsNotUndone(t *testing.T) {
	g, a, ctx, b := sharedNodeSessions(t)
	path := "/zkt/shared-" + newUUID() + "/n"

	_, err := NewSharedCount(a, path, 0).Get(g.arm(t, path))
	require.ErrorIs(t, err, context.Canceled)
	c := NewSharedCount(b, path, 0)
	v, err := c.Get(ctx)
	require.NoError(t, err)
	_, err = c.TrySet(ctx, 42, v.Version)
	require.NoError(t, err)
	g.free()

	require.Never(t, func() bool {
		v, err := c.Get(ctx)
		return err != nil || v.Count != 42
	}, time.Second, 20*time.Millisecond, "B's write must not be lost")
	require.NoError(t, b.Conn().Delete(path, -1))
}

func TestZKBarrierSetWhoseCallerGaveUpIsNotUndone(t *testing.T) {
	g, a, ctx, b := sharedNodeSessions(t)
	path := "/zkt/shared-" + newUUID() + "/n"

	require.ErrorIs(t, NewBarrier(a, path).Set(g.arm(t, path)), context.Canceled)
	bb := NewBarrier(b, path)
	require.NoError(t, bb.Set(ctx))
	g.free()

	require.Never(t, func() bool {
		set, err := bb.IsSet(ctx)
		return err != nil || !set
	}, time.Second, 20*time.Millisecond, "the barrier B set must stay set")
	require.NoError(t, bb.Remove(ctx))
}
