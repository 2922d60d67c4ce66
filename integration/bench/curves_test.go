package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestSessionMemory_RefusesAnUnknownKindOrNoSession(t *testing.T) {
	ctx := context.Background()
	_, err := SessionMemory(ctx, Env{Servers: []string{"127.0.0.1:1"}}, "curator", 1)
	assert.ErrorContains(t, err, `no session kind "curator"`)
	_, err = SessionMemory(ctx, Env{Servers: []string{"127.0.0.1:1"}}, MemoryGozk, 0)
	assert.ErrorContains(t, err, "0 sessions")
	_, err = MarkedChain(ctx, Env{Servers: []string{"127.0.0.1:1"}}, "/chain", 0)
	assert.ErrorContains(t, err, "0 links")
}

// The drain curve's floor and the memory curve on a real server: the
// marked chain hands over with one request per handoff (the release's
// multi), and each open session keeps heap and goroutines of its own.
func TestCurves_MarkedChainAndSessionMemoryOnARealServer(t *testing.T) {
	c := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := Env{Servers: c.Servers()}
	m, err := NewMeter(ctx, env.Servers[0])
	require.NoError(t, err)
	env.Meter = m

	d, err := MarkedChain(ctx, env, "/curves/chain", 20)
	require.NoError(t, err)
	assert.Equal(t, 20, d.Waiters)
	assert.Positive(t, d.PerHandoff)
	assert.Equal(t, d.PerHandoff*20, d.Total)
	if c.Backend() != zktest.BackendServers {
		// Pings and the meter's own reads are a few packets more.
		assert.InDelta(t, 1.0, d.ReqPerHandoff, 0.5, "requests per handoff: the release's multi")
	}

	for _, kind := range []string{MemoryZkrecipes, MemoryGozk} {
		r, err := SessionMemory(ctx, env, kind, 3)
		require.NoError(t, err, kind)
		assert.Equal(t, 3, r.Sessions, kind)
		assert.Positive(t, r.HeapPerSession, kind)
		assert.GreaterOrEqual(t, r.GoroutinesPerSession, 2.0, "%s: a connection reads and writes on goroutines of its own", kind)
	}
}
