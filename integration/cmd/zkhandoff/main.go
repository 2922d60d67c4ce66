// Command zkhandoff shows where the handoffs of a contended Mutex spend
// their time: n Sessions take and release one lock for a while, each with a
// Tracer, and for every handoff (from the holder's Release to the next
// holder's Acquire returning) it finds the release request and the
// requests the new holder sent after the release began.
//
//	ZK_SERVERS=127.0.0.1:2181 go run ./cmd/zkhandoff [-d 10s] [-n 8] [-fast=false]
//
// It prints the handoff percentiles, what the new holders sent, the
// latency of the release requests, and the slowest handoffs one by one.
// Start a server with `go run ./cmd/zkserve`. docs/performance.md ("The
// handoff tail") shows what it found.
package main

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/bench"
)

// op is one traced request.
type op struct {
	sent, done time.Time
	name, path string
}

// handoff is one acquisition that followed another holder's release.
type handoff struct {
	sess, prev    int       // the new holder's Session, the old one's
	enq, acq      time.Time // the new holder's Acquire call and return
	relStart      time.Time // the old holder's Release call
	release       op        // the old holder's release request
	after         []op      // what the new holder sent after relStart
	took, afterRe time.Duration
}

func main() {
	dur := flag.Duration("d", 10*time.Second, "how long the Sessions contend")
	n := flag.Int("n", 8, "Sessions contending")
	fast := flag.Bool("fast", true, "WithFastHandoff")
	profile := flag.String("cpuprofile", "", "write this process's CPU profile of the contention to this file")
	flag.Parse()
	servers := os.Getenv("ZK_SERVERS")
	if servers == "" {
		fmt.Fprintln(os.Stderr, "zkhandoff: set ZK_SERVERS (start a server with: go run ./cmd/zkserve)")
		os.Exit(2)
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "zkhandoff:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(strings.Split(servers, ","), *dur, *n, *fast); err != nil {
		fmt.Fprintln(os.Stderr, "zkhandoff:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(servers []string, dur time.Duration, n int, fast bool) error {
	ctx := context.Background()
	var mu sync.Mutex
	logs := make([][]op, n)
	sessions := make([]*zr.Session, n)
	for i := range n {
		tr := zr.TracerFunc(func(ev zr.TraceEvent) {
			now := time.Now()
			mu.Lock()
			logs[i] = append(logs[i], op{sent: now.Add(-ev.Latency), done: now, name: ev.Op, path: ev.Path})
			mu.Unlock()
		})
		s, err := zr.Connect(ctx, servers, zr.WithSessionTimeout(10*time.Second), zr.WithDialer(bench.LoopbackDialer), zr.WithTracer(tr))
		if err != nil {
			return err
		}
		defer s.Close()
		sessions[i] = s
	}
	path := fmt.Sprintf("/zkhandoff/%d", time.Now().UnixNano())
	var lastRel, lastSess atomic.Int64
	var hmu sync.Mutex
	var hs []handoff
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := zr.NewMutex(s, path, zr.WithFastHandoff(fast))
			for time.Now().Before(deadline) {
				enq := time.Now()
				l, err := m.Acquire(ctx)
				if err != nil {
					errc <- err
					return
				}
				h := handoff{sess: i, enq: enq, acq: time.Now(), relStart: time.Unix(0, lastRel.Load()), prev: int(lastSess.Load())}
				hmu.Lock()
				hs = append(hs, h)
				hmu.Unlock()
				lastSess.Store(int64(i))
				lastRel.Store(time.Now().UnixNano())
				if err := l.Release(ctx); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	hs = hs[1:] // the first acquisition followed no release
	for k := range hs {
		h := &hs[k]
		if i := slices.IndexFunc(logs[h.prev], func(o op) bool { return !o.sent.Before(h.relStart) }); i >= 0 {
			h.release = logs[h.prev][i]
		}
		for _, o := range logs[h.sess] {
			if o.sent.After(h.relStart) && !o.done.After(h.acq) {
				h.after = append(h.after, o)
			}
		}
		h.took, h.afterRe = h.acq.Sub(h.relStart), h.acq.Sub(h.release.done)
	}
	report(hs)
	return nil
}

func report(hs []handoff) {
	sort.Slice(hs, func(a, b int) bool { return hs[a].took < hs[b].took })
	took := func(q float64) time.Duration { return hs[int(q*float64(len(hs)-1))].took.Round(time.Microsecond) }
	fmt.Printf("handoffs %d: p50 %v, p90 %v, p99 %v, max %v\n", len(hs), took(.5), took(.9), took(.99), took(1))
	slow := hs[len(hs)*99/100:]
	fmt.Println("requests the new holder sent after the release began, all:", sent(hs))
	fmt.Println("the same, slowest 1%:", sent(slow))
	rel := make([]time.Duration, len(hs))
	kinds := map[string]int{}
	for i, h := range hs {
		rel[i] = h.release.done.Sub(h.release.sent)
		kinds[h.release.name]++
	}
	slices.Sort(rel)
	fmt.Printf("release requests %v: latency p50 %v, p99 %v\n", kinds, rel[len(rel)/2].Round(time.Microsecond), rel[len(rel)*99/100].Round(time.Microsecond))
	after := make([]time.Duration, len(slow))
	for i, h := range slow {
		after[i] = h.afterRe
	}
	slices.Sort(after)
	fmt.Printf("slowest 1%%: grant after the release's reply: p50 %v, max %v\n", after[len(after)/2].Round(time.Microsecond), after[len(after)-1].Round(time.Microsecond))
	fmt.Println("slowest 10:")
	for _, h := range hs[max(0, len(hs)-10):] {
		fmt.Printf("  %v: release %s took %v, grant %v after its reply; new holder sent %s\n",
			h.took.Round(time.Microsecond), h.release.name, h.release.done.Sub(h.release.sent).Round(time.Microsecond),
			h.afterRe.Round(time.Microsecond), describe(h))
	}
}

// sent counts what the new holders sent after the release began.
func sent(hs []handoff) map[string]int {
	m := map[string]int{}
	for _, h := range hs {
		var names []string
		for _, o := range h.after {
			names = append(names, o.name)
		}
		if len(names) == 0 {
			names = []string{"nothing"}
		}
		m[strings.Join(names, "+")]++
	}
	return m
}

func describe(h handoff) string {
	if len(h.after) == 0 {
		return "nothing"
	}
	var parts []string
	for _, o := range h.after {
		parts = append(parts, fmt.Sprintf("%s at +%v (took %v)", o.name, o.sent.Sub(h.relStart).Round(time.Microsecond), o.done.Sub(o.sent).Round(time.Microsecond)))
	}
	return strings.Join(parts, ", ")
}
