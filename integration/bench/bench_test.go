package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// One fresh standalone server for every benchmark of the run, so that
// zkrecipes and go-zookeeper's zk.Lock are measured on the same server.
var (
	shared    *zktest.Cluster
	sharedErr error
	sharedEnv Env
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if sharedEnv.Observer != nil {
			sharedEnv.Observer.Close()
		}
		_ = shared.Close()
	}
	os.Exit(code)
}

// env starts the shared server on first use (benchmarks only, so that a
// plain `go test` starts no server); it skips, or fails under CI, when no
// server can be started.
func env(b *testing.B) Env {
	b.Helper()
	if shared == nil && sharedErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared, sharedErr = zktest.StartCluster(ctx, zktest.WithJVMFlags()) // as zkbench runs it
		if sharedErr == nil {
			sharedEnv.Servers = shared.Servers()
			sharedEnv.Observer, sharedErr = ConnectRaw(ctx, sharedEnv.Servers)
		}
		if sharedErr == nil {
			sharedEnv.Meter, sharedErr = NewMeter(ctx, shared.Servers()[0])
		}
		if sharedErr == nil {
			// Warm the server's JIT up as zkbench does, so that the first
			// benchmark of a run does not meet a server still compiling.
			_, sharedErr = Floor(ctx, sharedEnv, "/bench/warmup", 200, 5000, 200)
		}
	}
	if sharedErr != nil {
		if os.Getenv("CI") != "" {
			b.Fatalf("no ZooKeeper for the benchmarks: %v", sharedErr)
		}
		b.Skipf("no ZooKeeper for the benchmarks: %v", sharedErr)
	}
	return sharedEnv
}

var seq int

func benchPath(b *testing.B) string {
	seq++
	return fmt.Sprintf("/bench/%s-%d", strings.NewReplacer("/", "_", "=", "_").Replace(b.Name()), seq)
}

func ctxFor(b *testing.B, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	b.Cleanup(cancel)
	return ctx
}

// withRawLock is Impls and the raw lock, the floor of the uncontended and
// contended workloads.
func withRawLock() []Impl { return append(slices.Clone(Impls), RawLock) }

// BenchmarkUncontended: one session acquires and releases, b.N times.
// ns/op is the mean cycle; p50/p99 ns and the server's requests per cycle
// are reported beside it.
func BenchmarkUncontended(b *testing.B) {
	for _, impl := range withRawLock() {
		b.Run(impl.Name, func(b *testing.B) {
			e := env(b)
			ctx := ctxFor(b, 10*time.Minute)
			b.ResetTimer()
			r, err := Uncontended(ctx, impl, e, benchPath(b), 20, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(r.P50), "p50-ns")
			b.ReportMetric(float64(r.P99), "p99-ns")
			b.ReportMetric(r.ReqPerCycle, "requests/op")
			b.ReportMetric(r.BytesPerCycle, "resp-bytes/op")
		})
	}
}

// BenchmarkContended8: 8 sessions contend for 3 s (whatever b.N is).
// ns/op is the mean time per acquisition; handoff p50/p99 come from the
// shared log, checked for exclusion. Then, untimed, the exclusion check:
// 1 s more with each holder staying 1 ms inside, where two holders at once
// overlap in the log (the timed run's sections, two log writes, seldom do).
func BenchmarkContended8(b *testing.B) {
	for _, impl := range withRawLock() {
		b.Run(impl.Name, func(b *testing.B) {
			e := env(b)
			ctx := ctxFor(b, 2*time.Minute)
			b.ResetTimer()
			r, err := Contended(ctx, impl, e, benchPath(b), Load{Sessions: 8, Duration: 3 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			if r.Violations > 0 {
				b.Fatalf("%d exclusion violations", r.Violations)
			}
			b.ReportMetric(float64(time.Second)/r.Throughput, "ns/op")
			b.ReportMetric(r.Throughput, "acq/s")
			b.ReportMetric(float64(r.HandoffP50), "handoff-p50-ns")
			b.ReportMetric(float64(r.HandoffP99), "handoff-p99-ns")
			b.ReportMetric(r.ReqPerAcq, "requests/op")
			b.ReportMetric(float64(r.ServerCPUPerAcq), "server-cpu-ns/op")
			b.ReportMetric(float64(r.ClientCPUPerAcq), "client-cpu-ns/op")
			b.StopTimer()
			x, err := Contended(ctx, impl, e, benchPath(b)+"-held", Load{Sessions: 8, Duration: time.Second, Hold: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			if x.Violations > 0 {
				b.Fatalf("exclusion check: %d violations in %d acquisitions held 1 ms", x.Violations, x.Acquisitions)
			}
			b.ReportMetric(float64(x.Acquisitions), "held-acq-checked")
		})
	}
}

// BenchmarkDrain: 50 and 200 waiters queued behind a holder drain (one
// drain whatever b.N is). ns/op is the time per handoff; resp-bytes/op the
// server's response bytes per handoff, which must not grow with the queue.
func BenchmarkDrain(b *testing.B) {
	for _, n := range []int{50, 200} {
		for _, impl := range Impls {
			b.Run(fmt.Sprintf("%d/%s", n, impl.Name), func(b *testing.B) {
				e := env(b)
				ctx := ctxFor(b, 3*time.Minute)
				b.ResetTimer()
				r, err := Drain(ctx, impl, e, benchPath(b), n)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.PerHandoff), "ns/op")
				b.ReportMetric(r.BytesPerHandoff, "resp-bytes/op")
				b.ReportMetric(r.ReqPerHandoff, "requests/op")
			})
		}
	}
}

// BenchmarkFloor: raw requests with no lock: the create/getChildren/delete
// cycle (the listing right behind the create; and all three in sequence),
// a 200-link delete→notification chain and the same chain with marked
// releases (FloorResult.MarkedPerHandoff).
func BenchmarkFloor(b *testing.B) {
	e := env(b)
	ctx := ctxFor(b, 5*time.Minute)
	b.ResetTimer()
	r, err := Floor(ctx, e, benchPath(b), 20, max(b.N, 200), 200)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(r.CycleP50), "cycle-p50-ns")
	b.ReportMetric(float64(r.CycleP99), "cycle-p99-ns")
	b.ReportMetric(float64(r.SequentialP50), "sequential-cycle-p50-ns")
	b.ReportMetric(float64(r.HandoffP50), "handoff-p50-ns")
	b.ReportMetric(float64(r.HandoffP99), "handoff-p99-ns")
	b.ReportMetric(float64(r.PerHandoff), "ns/handoff")
	b.ReportMetric(float64(r.MarkedPerHandoff), "marked-ns/handoff")
	b.ReportMetric(r.BytesPerHandoff, "resp-bytes/handoff")
	b.ReportMetric(float64(r.ServerCPUPerHandoff), "server-cpu-ns/handoff")
	b.ReportMetric(float64(r.ClientCPUPerHandoff), "client-cpu-ns/handoff")
}
