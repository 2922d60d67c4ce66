package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
)

// Per-entity locking: many locks on one Session.

// BenchmarkManyHeldLeases holds -bench.held leases (10,000 by default) on
// as many paths on one Session, and reports the heap bytes and goroutines
// each held lease costs once every hold has set the watch on its node
// (measured after a GC, against the same Session holding nothing).
func BenchmarkManyHeldLeases(b *testing.B) {
	e := env(b)
	ctx := ctxFor(b, 10*time.Minute)
	const n = 10_000
	for range b.N {
		s, err := zr.Connect(ctx, e.Servers, zr.WithSessionTimeout(SessionTimeout), zr.WithDialer(LoopbackDialer))
		if err != nil {
			b.Fatal(err)
		}
		dir := benchPath(b)
		// One acquisition first, so that what the Session sets up once
		// (workers, parents) is in the baseline.
		warm, err := zr.NewMutex(s, dir+"/warm").Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := warm.Release(ctx); err != nil {
			b.Fatal(err)
		}
		heap0, gor0 := settled(0)
		leases, err := holdMany(ctx, s, dir, n)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // past the grace after which every hold sets its watch
		heap1, gor1 := settled(gor0 + n/100)
		b.ReportMetric(float64(heap1-heap0)/n, "heapB/lease")
		b.ReportMetric(float64(gor1-gor0)/n, "goroutines/lease")
		for _, l := range leases {
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
		_ = s.Close()
	}
}

// holdMany acquires n leases on n paths under dir, 50 at a time.
func holdMany(ctx context.Context, s *zr.Session, dir string, n int) ([]*zr.Lease, error) {
	leases := make([]*zr.Lease, n)
	err := forEach(ctx, n, 50, func(i int) error {
		l, err := zr.NewMutex(s, fmt.Sprintf("%s/e%d", dir, i)).Acquire(ctx)
		leases[i] = l
		return err
	})
	return leases, err
}

// BenchmarkPerEntityLocks: 50 goroutines acquire and release locks on
// 1,000 paths, a random path each time, on one Session (zkrecipes) or one
// connection (go-zookeeper's zk.Lock), for -benchtime; it reports
// acquire+release cycles per second, the server's requests per cycle
// (pings included), and the CPU per cycle of the server process and of
// this one (the clients): with both on one 2-core machine, throughput
// follows their sum.
func BenchmarkPerEntityLocks(b *testing.B) {
	e := env(b)
	const workers, paths = 50, 1000
	for _, impl := range []string{"zkrecipes", "go-zookeeper"} {
		b.Run(impl, func(b *testing.B) {
			ctx := ctxFor(b, 10*time.Minute)
			dir := benchPath(b)
			cycle, closeFn, err := entityLocker(ctx, impl, e, dir, paths)
			if err != nil {
				b.Fatal(err)
			}
			defer closeFn()
			// Every path once, unmeasured: the first lock on a path creates
			// its parent, which a per-entity lock pays once per entity.
			for i := range paths {
				if err := cycle(ctx, i); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			var failed atomic.Value
			var wg sync.WaitGroup
			before, err := e.Meter.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			clientBefore, _ := ProcCPU(os.Getpid())
			b.ResetTimer()
			start := time.Now()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if err := cycle(ctx, rand.IntN(paths)); err != nil {
							failed.CompareAndSwap(nil, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
			clientAfter, _ := ProcCPU(os.Getpid())
			if d, err := e.Meter.Delta(ctx, before); err == nil {
				b.ReportMetric(float64(d.PacketsReceived)/float64(b.N), "requests/cycle")
				b.ReportMetric(float64(d.ServerCPU.Microseconds())/float64(b.N), "server-µs/cycle")
			}
			b.ReportMetric(float64((clientAfter-clientBefore).Microseconds())/float64(b.N), "client-µs/cycle")
		})
	}
}

// entityLocker returns one acquire+release cycle on path index i under
// dir, for impl.
func entityLocker(ctx context.Context, impl string, e Env, dir string, paths int) (func(context.Context, int) error, func(), error) {
	switch impl {
	case "zkrecipes":
		s, err := zr.Connect(ctx, e.Servers, zr.WithSessionTimeout(SessionTimeout), zr.WithDialer(LoopbackDialer))
		if err != nil {
			return nil, nil, err
		}
		ms := make([]*zr.Mutex, paths)
		for i := range ms {
			ms[i] = zr.NewMutex(s, fmt.Sprintf("%s/e%d", dir, i))
		}
		return func(ctx context.Context, i int) error {
			l, err := ms[i].Acquire(ctx)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}, func() { _ = s.Close() }, nil
	default:
		conn, err := ConnectRaw(ctx, e.Servers)
		if err != nil {
			return nil, nil, err
		}
		acl := zk.WorldACL(zk.PermAll)
		return func(_ context.Context, i int) error {
			l := zk.NewLock(conn, fmt.Sprintf("%s/e%d", dir, i), acl)
			if err := l.Lock(); err != nil {
				return err
			}
			return l.Unlock()
		}, conn.Close, nil
	}
}
