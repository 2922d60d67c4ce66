package bench

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// The Curator peer runs once per test binary, on the first call with the
// shared server, whatever b.N is.
var (
	curatorOnce sync.Once
	curatorSum  peers.Summary
	curatorErr  error
)

// BenchmarkSemaphoreAcquire: uncontended acquire latency of one lease of a
// semaphore (InterProcessSemaphoreV2 layout), zkrecipes in-process b.N
// times, and Curator's InterProcessSemaphoreV2 in a peer process on the
// same server in the same run (3 s of acquire/return cycles). ns/op and
// p50/p99 are of zkrecipes' Acquire alone (the release is not timed);
// curator-p50/p99 are the peer's, measured the same way.
func BenchmarkSemaphoreAcquire(b *testing.B) {
	e := env(b)
	s := openSessions(b, e, 1)[0]
	path := benchPath(b)
	ctx := ctxFor(b, 5*time.Minute)
	sem := zr.NewSemaphore(s, path, 1000)
	for i := 0; i < 20; i++ { // warm-up, and the parents exist
		ls, err := sem.Acquire(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		_ = ls[0].Release(ctx)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		ls, err := sem.Acquire(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		if err := ls[0].Release(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(Percentile(lat, 0.5)), "p50-ns")
	b.ReportMetric(float64(Percentile(lat, 0.99)), "p99-ns")

	curatorOnce.Do(func() {
		p := peers.Start(b, peers.Curator, "semaphore", "--servers", strings.Join(e.Servers, ","),
			"--path", path+"-curator", "--id", "bench", "--max", "1000", "--hold-ms", "0", "--duration", "3s")
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		curatorSum, curatorErr = p.Wait(pctx)
	})
	sum, err := curatorSum, curatorErr
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(sum.P50Micros)*1e3, "curator-p50-ns")
	b.ReportMetric(float64(sum.P99Micros)*1e3, "curator-p99-ns")
	b.ReportMetric(float64(sum.Acquisitions), "curator-cycles")
	b.Logf("zkrecipes p50 %v p99 %v over %d; Curator p50 %dus p99 %dus over %s cycles", Percentile(lat, 0.5), Percentile(lat, 0.99), len(lat),
		sum.P50Micros, sum.P99Micros, strconv.Itoa(sum.Acquisitions))
}
