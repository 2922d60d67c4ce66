package zkrecipes

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nameRecorder records the RecipeInfo of every acquisition and cache sync
// an Observer sees.
type nameRecorder struct {
	BaseObserver
	mu    sync.Mutex
	names map[string]string // Kind -> Name
}

func (r *nameRecorder) note(info RecipeInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names[info.Kind] = info.Name
}

func (r *nameRecorder) AcquireStart(ctx context.Context, ev AcquireStartEvent) context.Context {
	r.note(ev.Recipe)
	return ctx
}

func (r *nameRecorder) CacheSynced(ev CacheSyncEvent) { r.note(ev.Recipe) }

func (r *nameRecorder) name(kind string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.names[kind]
	return n, ok
}

// One WithName names every recipe an Observer sees by name: it reaches
// RecipeInfo.Name of each one's acquisitions or cache syncs.
func TestZKWithNameReachesRecipeInfoForEveryNamedRecipe(t *testing.T) {
	rec := &nameRecorder{names: map[string]string{}}
	ctx, s := zkSession(t, 60*time.Second, WithObserver(rec), WithPathNames(func(string) string { return "by-path" }))
	base := "/zkt/names-" + newUUID()

	l, err := NewMutex(s, base+"/mutex", WithName("m")).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	rw := NewRWMutex(s, base+"/rw", WithName("rw"))
	l, err = rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	l, err = rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	leases, err := NewSemaphore(s, base+"/sem", 2, WithName("sem")).Acquire(ctx, 1)
	require.NoError(t, err)
	for _, l := range leases {
		require.NoError(t, l.Release(ctx))
	}
	l, err = NewElection(s, base+"/elect", WithName("el")).Campaign(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	tc := NewTreeCache(s, base, WithName("tree"))
	require.NoError(t, tc.Start(ctx))
	require.NoError(t, tc.Close(ctx))
	nc := NewNodeCache(s, base, WithName("node"))
	require.NoError(t, nc.Start(ctx))
	require.NoError(t, nc.Close(ctx))
	g := NewGroupMember(s, base+"/group", "a", nil, WithName("group"))
	require.NoError(t, g.Start(ctx))
	require.NoError(t, g.Close(ctx))

	for kind, want := range map[string]string{
		KindMutex: "m", KindReadLock: "rw", KindWriteLock: "rw", KindSemaphore: "sem", KindElection: "el",
		KindTreeCache: "tree", KindNodeCache: "node", KindGroupMember: "group",
	} {
		got, ok := rec.name(kind)
		if assert.True(t, ok, "%s: nothing reported", kind) {
			assert.Equal(t, want, got, "%s: RecipeInfo.Name", kind)
		}
	}

	// The deprecated names are WithName.
	rec.mu.Lock()
	rec.names = map[string]string{}
	rec.mu.Unlock()
	l, err = NewMutex(s, base+"/mutex", WithLockName("old")).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	got, _ := rec.name(KindMutex)
	assert.Equal(t, "old", got, "WithLockName")
	l, err = NewMutex(s, base+"/mutex").Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	got, _ = rec.name(KindMutex)
	assert.Equal(t, "by-path", got, "without WithName, WithPathNames names it")
}
