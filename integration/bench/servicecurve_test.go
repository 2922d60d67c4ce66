package bench

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// The instances of a ServiceSet are Curator's JSON, each with an ID as
// long as Curator's default (a UUID), in ID order.
func TestServiceSet_InstancesAreCuratorsJSONWithUUIDLongIDs(t *testing.T) {
	s := NewServiceSet("/curves/services", 3)
	assert.Equal(t, "/curves/services/svc", s.Path())
	assert.Len(t, s.ID(7), 36)
	assert.Less(t, s.ID(9), s.ID(10))
	op, err := s.instanceOp(2, 10002, false)
	require.NoError(t, err)
	create := op.(*zk.CreateRequest)
	assert.Equal(t, s.Path()+"/"+s.ID(2), create.Path)
	inst, err := discovery.Unmarshal(create.Data)
	require.NoError(t, err)
	assert.Equal(t, s.Instance(2, 10002), inst)
	assert.Contains(t, string(create.Data), `"serviceType":"STATIC"`)
}

// The service curve on a small service (300 instances, a multi and a
// part) on a real server: the service is built and deleted whole, the
// floor reads every instance, the ServiceCache holds exactly the service
// and resyncs after a drop with nothing missed, and Curator's
// ServiceCache (where its jars are) loads it too.
func TestServiceCurve_OnASmallServiceOnARealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := ownEnv(t, ctx, "a shared server's other clients move its watch count") // the resync waits for it to be back

	s := NewServiceSet("/curves/services", serviceBatch+300)
	_, err := BuildServiceSet(ctx, env.Observer, s)
	require.NoError(t, err)
	kids, _, err := env.Observer.Children(s.Path())
	require.NoError(t, err)
	require.Len(t, kids, s.Instances)
	data, _, err := env.Observer.Get(s.Path() + "/" + s.ID(5))
	require.NoError(t, err)
	inst, err := discovery.Unmarshal(data)
	require.NoError(t, err)
	assert.Equal(t, s.Instance(5, 10005), inst)

	floor, err := RawServiceLoad(ctx, env, s)
	require.NoError(t, err)
	assert.Equal(t, s.Instances, floor.Nodes)
	assert.Positive(t, floor.Load)

	for rep := range 2 {
		r, err := ServiceCacheRun(ctx, env, s, rep)
		require.NoError(t, err, "repetition %d", rep)
		assert.Equal(t, s.Instances, r.Nodes, "the drops' changes leave the instance count as it was")
		assert.Zero(t, r.Mismatches)
		assert.EqualValues(t, 2, r.ServerWatches, "one persistent recursive watch")
		assert.Positive(t, r.HeapPerNode)
		assert.Positive(t, r.Resync)
		assert.Zero(t, r.EventsMissed)
	}

	if peers.Available(peers.Curator) == nil {
		cr, err := CuratorServiceCacheRun(ctx, env, s, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, s.Instances, cr.Nodes)
		assert.Positive(t, cr.HeapPerNode)
		more := s
		more.Instances++
		_, err = CuratorServiceCacheRun(ctx, env, more, 5*time.Second)
		assert.ErrorContains(t, err, "ServiceCache initialized after", "an instance count other than the service's is a failure")
	}

	_, err = DeleteCacheTree(ctx, env.Observer, s.Base)
	require.NoError(t, err)
	ok, _, err := env.Observer.Exists(s.Base)
	require.NoError(t, err)
	assert.False(t, ok, "the service is gone")
}
