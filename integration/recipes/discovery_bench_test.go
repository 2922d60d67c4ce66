package recipes_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
)

// TestDiscoveryBench_RegistrationToCacheBesideCurator measures, over
// ZKRECIPES_DISCOVERY_BENCH registrations (skipped when unset), the time
// from a Go Register call to the instance's appearance in a Go
// ServiceCache (another session) and in Curator's ServiceCache (another
// process), in one run. Both clocks are this machine's wall clock.
func TestDiscoveryBench_RegistrationToCacheBesideCurator(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("ZKRECIPES_DISCOVERY_BENCH"))
	if err != nil || n <= 0 {
		t.Skip("set ZKRECIPES_DISCOVERY_BENCH=N to run N registrations")
	}
	base := testPath(t)
	cur := startDiscoveryPeer(t, base)
	reg := connect(t, server(t), nil)
	watcher := connect(t, server(t), nil)
	d := discovery.New(reg.Session, base)
	defer d.Close(context.Background())
	ctx := ctxT(t, 5*time.Minute)
	cache := discovery.New(watcher.Session, base).NewCache("api")
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctx))
	cur.ask(t, "OK", "follow", "api")

	var goLat, javaLat []time.Duration
	for i := 1; i <= n; i++ {
		_, changed := cache.Instances()
		start := time.Now()
		require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: fmt.Sprintf("i-%04d", i), Address: "127.0.0.1", Port: 1000 + i}))
		for insts, _ := cache.Instances(); len(insts) != i; insts, _ = cache.Instances() {
			select {
			case <-changed:
				_, changed = cache.Instances()
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
		goLat = append(goLat, time.Since(start))
		at := cur.ask(t, "AT", "await", "api", strconv.Itoa(i))
		ns, err := strconv.ParseInt(at[0], 10, 64)
		require.NoError(t, err)
		javaLat = append(javaLat, time.Unix(0, ns).Sub(start))
	}
	p := func(l []time.Duration, q float64) time.Duration {
		s := slices.Clone(l)
		slices.Sort(s)
		return s[int(q*float64(len(s)-1))]
	}
	t.Logf("registration -> cache over %d registrations: zkrecipes ServiceCache p50 %v p99 %v; Curator 5.4 ServiceCache p50 %v p99 %v",
		n, p(goLat, 0.5), p(goLat, 0.99), p(javaLat, 0.5), p(javaLat, 0.99))
}
