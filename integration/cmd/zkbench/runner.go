package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/bench"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// runner runs the workloads on one implementation.
type runner interface {
	name() string
	uncontended(ctx context.Context, env bench.Env, path string) (bench.UncontendedResult, error)
	contended(ctx context.Context, env bench.Env, path string, load bench.Load) (bench.ContendedResult, error)
	drain(ctx context.Context, env bench.Env, path string, n int) (bench.DrainResult, error)
}

func newRunner(name string, c config) (runner, error) {
	if impl, ok := bench.ImplByName(name); ok {
		return inProcess{impl: impl, c: c}, nil
	}
	switch name {
	case peers.Curator, peers.Kazoo:
		if err := peers.Available(name); err != nil {
			return nil, err
		}
		return peerRunner{kind: name, c: c}, nil
	}
	return nil, fmt.Errorf("unknown implementation %q (want zkrecipes, gozk, curator, kazoo, zkrecipes-plain or zkrecipes-nowire)", name)
}

// inProcess runs an implementation in this process.
type inProcess struct {
	impl bench.Impl
	c    config
}

func (r inProcess) name() string { return r.impl.Name }

func (r inProcess) uncontended(ctx context.Context, env bench.Env, path string) (bench.UncontendedResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return bench.Uncontended(ctx, r.impl, env, path, r.c.Warmup, r.c.Cycles)
}

func (r inProcess) contended(ctx context.Context, env bench.Env, path string, load bench.Load) (bench.ContendedResult, error) {
	ctx, cancel := context.WithTimeout(ctx, load.Duration+2*time.Minute)
	defer cancel()
	return bench.Contended(ctx, r.impl, env, path, load)
}

func (r inProcess) drain(ctx context.Context, env bench.Env, path string, n int) (bench.DrainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return bench.Drain(ctx, r.impl, env, path, n)
}

// peerRunner runs Curator or kazoo as a peer process in its synchronised
// bench mode: the peer sets up, prints READY and waits; the runner reads
// the server's counters, starts the measured phase, waits for the peer's
// summary, reads the counters again, and only then lets the peer close its
// sessions.
type peerRunner struct {
	kind string
	c    config
}

func (r peerRunner) name() string { return r.kind }

// measured runs one synchronised peer and returns its summary, the
// server's counters and the peer's CPU time (zero when it cannot be read)
// over its measured phase. ready runs after READY and before the counters
// are read.
func (r peerRunner) measured(ctx context.Context, env bench.Env, ready func() error, args ...string) (peers.Summary, bench.Counters, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	// Every server: the peer gives its i-th session the i-th (mod n), as
	// Env.ServerFor does for the implementations measured in-process.
	args = append(args, "--servers", strings.Join(env.Servers, ","), "--sync", "1", "--session-timeout-ms", strconv.Itoa(int(bench.SessionTimeout/time.Millisecond)))
	p, err := peers.Launch(ctx, r.kind, args...)
	if err != nil {
		return peers.Summary{}, bench.Counters{}, 0, err
	}
	defer p.Kill()
	if _, err := p.WaitLine(ctx, "READY"); err != nil {
		return peers.Summary{}, bench.Counters{}, 0, err
	}
	if ready != nil {
		if err := ready(); err != nil {
			return peers.Summary{}, bench.Counters{}, 0, err
		}
	}
	before, err := env.Meter.Read(ctx)
	if err != nil {
		return peers.Summary{}, bench.Counters{}, 0, err
	}
	cpu0, cpuErr := bench.ProcCPU(p.Pid())
	if err := p.Send("go"); err != nil {
		return peers.Summary{}, bench.Counters{}, 0, err
	}
	if _, err := p.WaitLine(ctx, "{"); err != nil {
		return peers.Summary{}, bench.Counters{}, 0, err
	}
	cpu1, err := bench.ProcCPU(p.Pid())
	if cpuErr != nil || err != nil {
		cpu0, cpu1 = 0, 0
	}
	delta, err := env.Meter.Delta(ctx, before)
	if err != nil {
		return peers.Summary{}, bench.Counters{}, 0, err
	}
	if err := p.CloseStdin(); err != nil {
		return peers.Summary{}, bench.Counters{}, 0, err
	}
	sum, err := p.Wait(ctx)
	return sum, delta, cpu1 - cpu0, err
}

func rawNanos(s peers.Summary, key string) time.Duration {
	v, _ := s.Raw[key].(float64)
	return time.Duration(v)
}

func (r peerRunner) uncontended(ctx context.Context, env bench.Env, path string) (bench.UncontendedResult, error) {
	sum, d, _, err := r.measured(ctx, env, nil, "bench-uncontended", "--path", path,
		"--count", strconv.Itoa(r.c.Cycles), "--warmup", strconv.Itoa(r.c.Warmup), "--duration", "600s")
	if err != nil {
		return bench.UncontendedResult{}, err
	}
	n := r.c.Cycles
	return bench.UncontendedResult{
		Cycles: n, P50: rawNanos(sum, "p50_ns"), P99: rawNanos(sum, "p99_ns"),
		ReqPerCycle:   float64(d.PacketsReceived) / float64(n),
		BytesPerCycle: float64(d.ResponseBytes) / float64(n),
	}, nil
}

func (r peerRunner) contended(ctx context.Context, env bench.Env, path string, load bench.Load) (bench.ContendedResult, error) {
	logf, err := os.CreateTemp("", "zkbench-"+r.kind+"-*.log")
	if err != nil {
		return bench.ContendedResult{}, err
	}
	logf.Close()
	defer os.Remove(logf.Name())
	sum, d, cpu, err := r.measured(ctx, env, nil, "bench-contended", "--path", path, "--id", r.kind,
		"--sessions", strconv.Itoa(load.Sessions), "--duration", fmt.Sprintf("%dms", load.Duration.Milliseconds()),
		"--hold-us", strconv.FormatInt(load.Hold.Microseconds(), 10), "--log", logf.Name())
	if err != nil {
		return bench.ContendedResult{}, err
	}
	rep, err := peers.CheckLog(logf.Name())
	if err != nil {
		return bench.ContendedResult{}, err
	}
	n := sum.Acquisitions
	k := bench.ContendedResult{
		Sessions: load.Sessions, Duration: load.Duration, Hold: load.Hold, Acquisitions: n,
		Throughput: float64(n) / load.Duration.Seconds(),
		HandoffP50: bench.Percentile(rep.Handoffs, 0.5), HandoffP99: bench.Percentile(rep.Handoffs, 0.99),
		Handoffs: len(rep.Handoffs), Violations: len(rep.Violations),
		ClientCPUPerAcq: bench.PerOp(cpu, n),
	}
	k.SetServerWork(d)
	return k, nil
}

func (r peerRunner) drain(ctx context.Context, env bench.Env, path string, n int) (bench.DrainResult, error) {
	// Each Curator or kazoo waiter sets one watch, on its predecessor.
	ready := func() error {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return bench.QueueReady(rctx, env, path, n+1, n)
	}
	sum, d, _, err := r.measured(ctx, env, ready, "bench-drain", "--path", path, "--id", r.kind,
		"--sessions", strconv.Itoa(n), "--duration", "600s")
	if err != nil {
		return bench.DrainResult{}, err
	}
	total := rawNanos(sum, "total_ns")
	return bench.DrainResult{
		Waiters: n, Total: total, PerHandoff: total / time.Duration(n),
		BytesPerHandoff: float64(d.ResponseBytes) / float64(n),
		ReqPerHandoff:   float64(d.PacketsReceived) / float64(n),
	}, nil
}

// workQueuer is a runner that also measures the work queue workload:
// zkrecipes' WorkQueue in-process, Curator's DistributedQueue (with a lock
// path) as a peer.
type workQueuer interface {
	hasWorkQueue() bool
	workQueue(ctx context.Context, env bench.Env, path string, items, consumers int) (bench.WorkQueueResult, error)
}

func (r inProcess) hasWorkQueue() bool { return r.impl.Name == "zkrecipes" }

func (r inProcess) workQueue(ctx context.Context, env bench.Env, path string, items, consumers int) (bench.WorkQueueResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return bench.WorkQueueConsume(ctx, env, path, items, consumers)
}

func (r peerRunner) hasWorkQueue() bool { return r.kind == peers.Curator }

func (r peerRunner) workQueue(ctx context.Context, env bench.Env, path string, items, consumers int) (bench.WorkQueueResult, error) {
	sum, d, _, err := r.measured(ctx, env, nil, "bench-workqueue", "--path", path, "--id", r.kind,
		"--sessions", strconv.Itoa(consumers), "--count", strconv.Itoa(items), "--duration", "600s")
	if err != nil {
		return bench.WorkQueueResult{}, err
	}
	return bench.NewWorkQueueResult(consumers, items, rawNanos(sum, "total_ns"), d), nil
}
