package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
)

// SessionMemoryResult is what n idle sessions of one kind cost this
// process: the live heap (after a GC) and the goroutines they add, per
// session.
type SessionMemoryResult struct {
	Sessions             int     `json:"sessions"`
	HeapPerSession       float64 `json:"heap_bytes_per_session"`
	GoroutinesPerSession float64 `json:"goroutines_per_session"`
}

// The kinds of session SessionMemory opens.
const (
	// MemoryZkrecipes is a zkrecipes Session, connected as the benchmarks
	// connect it (zr.Connect).
	MemoryZkrecipes = "zkrecipes"
	// MemoryGozk is a bare go-zookeeper connection (zk.Connect, its events
	// drained), as ConnectRaw opens it.
	MemoryGozk = "gozk"
)

// SessionMemory opens one session of kind (MemoryZkrecipes or MemoryGozk)
// and keeps it open, so that what the first one sets up in the process is
// in the baseline; then it opens n more, each with a session on the server,
// and measures the live heap and the goroutines they add. It closes every
// session before it returns. Nothing else in the process should allocate
// meanwhile.
func SessionMemory(ctx context.Context, env Env, kind string, n int) (SessionMemoryResult, error) {
	var open func(ctx context.Context, servers []string) (func(), error)
	switch kind {
	case MemoryZkrecipes:
		open = func(ctx context.Context, servers []string) (func(), error) {
			s, err := zr.Connect(ctx, servers, zr.WithSessionTimeout(SessionTimeout), zr.WithDialer(LoopbackDialer))
			if err != nil {
				return nil, err
			}
			return func() { _ = s.Close() }, nil
		}
	case MemoryGozk:
		open = func(ctx context.Context, servers []string) (func(), error) {
			c, err := ConnectRaw(ctx, servers)
			if err != nil {
				return nil, err
			}
			return c.Close, nil
		}
	default:
		return SessionMemoryResult{}, fmt.Errorf("bench: no session kind %q (want %q or %q)", kind, MemoryZkrecipes, MemoryGozk)
	}
	if n < 1 {
		return SessionMemoryResult{}, fmt.Errorf("bench: session memory of %d sessions", n)
	}
	closers := make([]func(), n+1)
	defer func() {
		var wg sync.WaitGroup
		for _, c := range closers {
			if c != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c()
				}()
			}
		}
		wg.Wait()
	}()
	var err error
	if closers[0], err = open(ctx, env.ServerFor(0)); err != nil {
		return SessionMemoryResult{}, err
	}
	steady()
	heap0, gor0 := settled(0)
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			closers[i], errs[i-1] = open(ctx, env.ServerFor(i))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return SessionMemoryResult{}, err
	}
	steady()
	heap1, gor1 := settled(0)
	return SessionMemoryResult{
		Sessions:             n,
		HeapPerSession:       (float64(heap1) - float64(heap0)) / float64(n),
		GoroutinesPerSession: float64(gor1-gor0) / float64(n),
	}, nil
}

// steady waits until the goroutine count has not changed for 200 ms (a
// Session may start a goroutine just after Connect returns), or 10 s.
func steady() {
	deadline := time.Now().Add(10 * time.Second)
	last, since := runtime.NumGoroutine(), time.Now()
	for time.Since(since) < 200*time.Millisecond && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polls the count; orders nothing
		if g := runtime.NumGoroutine(); g != last {
			last, since = g, time.Now()
		}
	}
}

// settled returns the live heap after a GC and the goroutine count, once
// the count is at most atMost (0: at once), or after 10 s.
func settled(atMost int) (heap uint64, goroutines int) {
	deadline := time.Now().Add(10 * time.Second)
	for atMost > 0 && runtime.NumGoroutine() > atMost && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polls the count; orders nothing
	}
	runtime.GC()
	runtime.GC() // the first cycle's finalizers may free more
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}
