package zkrecipes

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	seam "github.com/zkrecipes/zkrecipes/internal/hooks"
)

// pathRecorder is an Observer that records the paths of the requests it
// sees.
type pathRecorder struct {
	BaseObserver
	mu    sync.Mutex
	paths []string
}

func (r *pathRecorder) OpDone(_ context.Context, ev OpEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths = append(r.paths, ev.Op+" "+ev.Path)
}

func (r *pathRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

// WithTracer is an adapter on the Observer: beside an Observer, its Tracer
// still sees every request, with the absolute path it documents, while the
// Observer sees the path relative to the namespace.
func TestZKWithTracerAdapterStillSeesAbsolutePathsBesideAnObserver(t *testing.T) {
	ns := "/zkt/tracer-" + newUUID()
	var mu sync.Mutex
	var traced []string
	tracer := TracerFunc(func(ev TraceEvent) {
		mu.Lock()
		defer mu.Unlock()
		traced = append(traced, ev.Op+" "+ev.Path)
	})
	obs := &pathRecorder{}
	ctx, s := zkSession(t, 30*time.Second, WithNamespace(ns), WithTracer(tracer), WithObserver(obs))
	_, err := s.Create(ctx, "/x", []byte("d"), WithParents(true))
	require.NoError(t, err)
	_, _, err = s.Get(ctx, "/x")
	require.NoError(t, err)
	mu.Lock()
	got := append([]string(nil), traced...)
	mu.Unlock()
	assert.Contains(t, got, "getData "+ns+"/x", "the Tracer sees the absolute path")
	assert.Contains(t, obs.seen(), "getData /x", "the Observer sees the path relative to the namespace")
	assert.Equal(t, obs, seam.Observer(s), "the Observer given is the one package discovery is handed")
}

// A Tracer alone (no Observer) still sees every request.
func TestZKWithTracerAloneSeesEveryRequest(t *testing.T) {
	var mu sync.Mutex
	var traced []string
	ctx, s := zkSession(t, 30*time.Second, WithTracer(TracerFunc(func(ev TraceEvent) {
		mu.Lock()
		defer mu.Unlock()
		traced = append(traced, ev.Op+" "+ev.Path)
	})))
	_, err := s.Exists(ctx, "/zkt")
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, traced, "exists /zkt")
	assert.Nil(t, seam.Observer(s), "no Observer was given: discovery is handed none")
}
