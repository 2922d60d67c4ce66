package bench

import (
	"context"
	"time"
)

// CuratorServiceCacheRun measures Apache Curator 5.4's ServiceCache
// (curator-x-discovery) of s in a JVM of its own
// (peers/java/CuratorServiceCacheBench.java), as CuratorCacheRun measures
// its CuratorCache: Nodes (the instances cached), Load (start until its
// start returns, the instances loaded) and HeapPerNode (the JVM's used
// heap after full GCs, per instance). A cache not started within limit,
// or holding other than s.Instances instances once started, is an error
// saying how many it held and what went wrong (the unhandled errors its
// client reported, its connection's losses).
func CuratorServiceCacheRun(ctx context.Context, env Env, s ServiceSet, limit time.Duration) (CacheRun, error) {
	return runCuratorCachePeer(ctx, env, curatorPeer{"ServiceCache", "curator service cache peer", "zkrecipes.peers.CuratorServiceCacheBench"},
		s.Instances, limit, s.Base, s.Name)
}
