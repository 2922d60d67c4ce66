package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
)

// openSessions connects n zkrecipes Sessions to the shared server.
func openSessions(b *testing.B, e Env, n int) []*zr.Session {
	b.Helper()
	ctx := ctxFor(b, time.Minute)
	out := make([]*zr.Session, n)
	for i := range out {
		s, err := zr.Connect(ctx, e.Servers, zr.WithSessionTimeout(10*time.Second), zr.WithDialer(LoopbackDialer))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		out[i] = s
	}
	return out
}

// BenchmarkReadLock8Readers: 8 sessions, each its own goroutine, take and
// return the read lock of one path b.N times in all. Readers share the
// lock, so acquisitions overlap: acq/s is the aggregate throughput and
// max-inside the most readers seen holding at once (from the grant until
// the release's delete is confirmed). The Write8 variant runs the same
// loop on the write lock, for comparison (a writer counts until it sends
// its delete).
func BenchmarkReadLock8Readers(b *testing.B) {
	for _, side := range []string{"Read8", "Write8"} {
		b.Run(side, func(b *testing.B) {
			e := env(b)
			sessions := openSessions(b, e, 8)
			path := benchPath(b)
			ctx := ctxFor(b, 5*time.Minute)
			var left, inside, maxInside atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			errs := make(chan error, len(sessions))
			b.ResetTimer()
			start := time.Now()
			for _, s := range sessions {
				rw := zr.NewRWMutex(s, path)
				lk := rw.ReadLock()
				if side == "Write8" {
					lk = rw.WriteLock()
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						l, err := lk.Acquire(ctx)
						if err != nil {
							errs <- err
							return
						}
						n := inside.Add(1)
						for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
						}
						if side == "Write8" {
							inside.Add(-1) // held until the delete is sent
						}
						err = l.Release(context.Background())
						if side == "Read8" {
							inside.Add(-1) // held until the delete is confirmed
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acq/s")
			b.ReportMetric(float64(maxInside.Load()), "max-inside")
		})
	}
}
