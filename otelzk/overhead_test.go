package otelzk_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
)

// BenchmarkLockOverhead measures the adapter's cost on a loaded machine:
// rounds in which each mode (off, metrics, otel: see BenchmarkLock) runs
// the uncontended workload (one Session, acquire + release) and the
// contended one (8 Sessions on one lock), in an order that rotates every
// round, each mode on Sessions of its own made once. It reports per mode
// the median over the rounds of the wall time per acquisition and of this
// process's CPU time (user + system) per acquisition: the client's cost,
// the server being another process. It ignores b.N.
//
//	go test -run '^$' -bench LockOverhead -benchtime 1x .
func BenchmarkLockOverhead(b *testing.B) {
	c := server(b)
	modes := []string{"off", "metrics", "otel"}
	const rounds, uncontendedOps, contendedOps, sessions = 15, 200, 400, 8
	type rig struct {
		one  *zr.Mutex
		many []*zr.Mutex
	}
	rigs := map[string]rig{}
	for _, mode := range modes {
		r := rig{one: zr.NewMutex(benchSession(b, c.Servers(), mode), benchPath(b)+"-"+mode+"-u", zr.WithName("bench"))}
		path := benchPath(b) + "-" + mode + "-c"
		for range sessions {
			r.many = append(r.many, zr.NewMutex(benchSession(b, c.Servers(), mode), path, zr.WithName("bench")))
		}
		rigs[mode] = r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	wall, cpu := map[string][]float64{}, map[string][]float64{}
	measure := func(key string, ops int, run func() error) {
		t0, c0 := time.Now(), cpuTime()
		if err := run(); err != nil {
			b.Fatal(err)
		}
		wall[key] = append(wall[key], float64(time.Since(t0).Nanoseconds())/float64(ops))
		cpu[key] = append(cpu[key], float64((cpuTime()-c0).Nanoseconds())/float64(ops))
	}
	b.ResetTimer()
	for round := range rounds {
		for i := range modes {
			mode := modes[(i+round)%len(modes)]
			r := rigs[mode]
			measure("uncontended/"+mode, uncontendedOps, func() error {
				for range uncontendedOps {
					if err := cycle(ctx, r.one); err != nil {
						return err
					}
				}
				return nil
			})
			measure("contended8/"+mode, contendedOps, func() error { return contend(ctx, r.many, contendedOps) })
		}
	}
	b.StopTimer()
	for _, w := range []string{"uncontended", "contended8"} {
		for _, mode := range modes {
			k := w + "/" + mode
			b.ReportMetric(median(wall[k]), k+"-ns/op")
			b.ReportMetric(median(cpu[k]), k+"-cpu-ns/op")
		}
		for _, mode := range modes[1:] {
			b.Logf("%s %s vs off: wall %+.1f%%, client cpu %+.1f%% (medians of %d rounds)", w, mode,
				100*(median(wall[w+"/"+mode])/median(wall[w+"/off"])-1), 100*(median(cpu[w+"/"+mode])/median(cpu[w+"/off"])-1), rounds)
		}
	}
}

func cycle(ctx context.Context, m *zr.Mutex) error {
	l, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	return l.Release(ctx)
}

// contend has ms acquire and release the lock ops times in all.
func contend(ctx context.Context, ms []*zr.Mutex, ops int) error {
	var left atomic.Int64
	left.Store(int64(ops))
	var wg sync.WaitGroup
	errs := make(chan error, len(ms))
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := cycle(ctx, m); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err, ok := <-errs; ok {
		return fmt.Errorf("contended: %w", err)
	}
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkObserverCycle is the adapter's own cost for the events of one
// uncontended acquire + release (the acquisition, three requests, the
// grant, the release's request and the lease's end), without a server:
// the part of BenchmarkLockOverhead that is not noise.
func BenchmarkObserverCycle(b *testing.B) {
	for _, mode := range []string{"metrics", "otel"} {
		b.Run(mode, func(b *testing.B) {
			obs := benchObserver(b, mode)
			info := zr.RecipeInfo{Kind: zr.KindMutex, Name: "bench", Path: "/locks/order-1"}
			ctx := context.Background()
			op := func(ctx context.Context, name string) {
				obs.OpDone(ctx, zr.OpEvent{Op: name, Path: "/locks/order-1/_c_x-lock-0000000001", Start: time.Now(), Latency: time.Millisecond})
			}
			b.ReportAllocs()
			for range b.N {
				actx := obs.AcquireStart(ctx, zr.AcquireStartEvent{Recipe: info, N: 1})
				op(actx, "create")
				op(actx, "getChildren")
				op(actx, "getData")
				obs.AcquireEnd(actx, zr.AcquireEndEvent{Recipe: info, N: 1, Wait: time.Millisecond, Attempts: 1, Token: 7})
				op(ctx, "delete")
				obs.LeaseEnd(ctx, zr.LeaseEndEvent{Recipe: info, Held: time.Millisecond, Cause: zr.EndReleased, Err: zr.ErrReleased})
			}
		})
	}
}
