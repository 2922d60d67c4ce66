package recipes_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
)

// TestDiscovery_QueryNamingAHugeServiceOrInstanceIsRefusedAtOnceAndDisturbsNoLease:
// every discovery query (names, instances, one instance, a cache, a
// provider) whose path holds a service name, instance ID or base path of
// 1.1 MB fails at once with ErrInvalidPath, before any request: the server
// answers such a read by closing the connection, which would put every
// lease of the Session in doubt.
func TestDiscovery_QueryNamingAHugeServiceOrInstanceIsRefusedAtOnceAndDisturbsNoLease(t *testing.T) {
	long := strings.Repeat("x", 1100*1024)
	calls := map[string]func(s *zr.Session, base string) func(context.Context) error{
		"QueryForNames(huge base path)": func(s *zr.Session, base string) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := discovery.New(s, base+"/"+long).QueryForNames(ctx)
				return err
			}
		},
		"QueryForInstances(huge name)": func(s *zr.Session, base string) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := discovery.New(s, base).QueryForInstances(ctx, long)
				return err
			}
		},
		"QueryForInstance(huge name)": func(s *zr.Session, base string) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := discovery.New(s, base).QueryForInstance(ctx, long, "a")
				return err
			}
		},
		"QueryForInstance(huge id)": func(s *zr.Session, base string) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := discovery.New(s, base).QueryForInstance(ctx, "api", long)
				return err
			}
		},
		"ServiceCache.Start(huge name)": func(s *zr.Session, base string) func(context.Context) error {
			return func(ctx context.Context) error {
				c := discovery.New(s, base).NewCache(long)
				defer func() { _ = c.Close(context.Background()) }()
				return c.Start(ctx)
			}
		},
		"Provider.Start(huge name)": func(s *zr.Session, base string) func(context.Context) error {
			return func(ctx context.Context) error {
				p := discovery.New(s, base).NewProvider(long)
				defer func() { _ = p.Close(context.Background()) }()
				return p.Start(ctx)
			}
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			b := newBystander(t)
			path := testPath(t)
			done := make(chan error, 1)
			go func() { done <- call(b.cl.Session, path)(context.Background()) }()
			select {
			case err := <-done:
				require.ErrorIs(t, err, zr.ErrInvalidPath)
				assert.Less(t, len(err.Error()), 1000, "the error quotes a shortened path")
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer after 10s with context.Background(): it must fail at once")
			}
			b.undisturbed(t, path)
		})
	}
}

// opRecorder is an Observer that keeps every OpDone event.
type opRecorder struct {
	zr.BaseObserver
	mu  sync.Mutex
	ops []zr.OpEvent
}

func (r *opRecorder) OpDone(_ context.Context, ev zr.OpEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, ev)
}

func (r *opRecorder) seen(op, path string, want error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.ops {
		if ev.Op == op && ev.Path == path && (errors.Is(ev.Err, want) || ev.Err == want) {
			return true
		}
	}
	return false
}

// TestDiscovery_QueriesAreSeenByTheObserverLikeTheRecipesRequests: the
// reads of discovery's queries are the Session's requests: its Observer
// sees each one, a refused one too (with its ErrInvalidPath), as for the
// recipes.
func TestDiscovery_QueriesAreSeenByTheObserverLikeTheRecipesRequests(t *testing.T) {
	obs := &opRecorder{}
	cl := connect(t, server(t), nil, zr.WithObserver(obs))
	base := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	d := discovery.New(cl.Session, base)
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Address: "127.0.0.1", Port: 1}))
	t.Cleanup(func() { _ = d.Close(context.Background()) })

	got, err := d.QueryForInstances(ctx, "api")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.True(t, obs.seen("getChildren", base+"/api", nil), "the listing of the instances")
	assert.True(t, obs.seen("getData", base+"/api/a", nil), "the read of the instance")

	long := strings.Repeat("x", 1100*1024)
	_, err = d.QueryForInstance(ctx, "api", long)
	require.ErrorIs(t, err, zr.ErrInvalidPath)
	assert.True(t, obs.seen("getData", base+"/api/"+long, zr.ErrInvalidPath), "the refused read")
}
