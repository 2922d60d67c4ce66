package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// Env is the server the workloads run against.
type Env struct {
	// Servers are the client addresses ("127.0.0.1:port").
	Servers []string
	// Meter reads the server's counters (a standalone server: one address).
	Meter *Meter
	// Observer is a plain connection for looking at the server from outside.
	Observer *zk.Conn
}

// ServerFor returns the address session i of a workload is given. On an
// ensemble, session i connects to server i mod n, so that every
// implementation runs with the same placement of its sessions (a client
// given every server would pick one at random, and the repetitions would
// differ in where the sessions landed).
func (e Env) ServerFor(i int) []string {
	if len(e.Servers) <= 1 {
		return e.Servers
	}
	return []string{e.Servers[i%len(e.Servers)]}
}

// UncontendedResult is one run of the uncontended workload.
type UncontendedResult struct {
	Cycles int           `json:"cycles"`
	P50    time.Duration `json:"p50_ns"`
	P99    time.Duration `json:"p99_ns"`
	// ReqPerCycle is the packets the server received per cycle.
	ReqPerCycle float64 `json:"requests_per_cycle"`
	// BytesPerCycle is the server's response bytes per cycle.
	BytesPerCycle float64 `json:"response_bytes_per_cycle"`
}

// Uncontended opens one session, runs warmup unmeasured acquire+release
// cycles on path, then n measured ones.
func Uncontended(ctx context.Context, impl Impl, env Env, path string, warmup, n int) (UncontendedResult, error) {
	l, err := impl.Open(ctx, env.ServerFor(0), path)
	if err != nil {
		return UncontendedResult{}, err
	}
	defer l.Close()
	cycle := func() error {
		if err := l.Lock(ctx); err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	for range warmup {
		if err := cycle(); err != nil {
			return UncontendedResult{}, err
		}
	}
	before, err := env.Meter.Read(ctx)
	if err != nil {
		return UncontendedResult{}, err
	}
	lat := make([]time.Duration, n)
	for i := range n {
		t0 := time.Now()
		if err := cycle(); err != nil {
			return UncontendedResult{}, err
		}
		lat[i] = time.Since(t0)
	}
	d, err := env.Meter.Delta(ctx, before)
	if err != nil {
		return UncontendedResult{}, err
	}
	return UncontendedResult{
		Cycles: n, P50: Percentile(lat, 0.5), P99: Percentile(lat, 0.99),
		ReqPerCycle:   float64(d.PacketsReceived) / float64(n),
		BytesPerCycle: float64(d.ResponseBytes) / float64(n),
	}, nil
}

// Load is the shape of a contended run.
type Load struct {
	// Sessions is the number of contenders, each on a session of its own.
	Sessions int
	// Duration is how long the contenders run, measured.
	Duration time.Duration
	// Hold is how long each holder stays inside its critical section,
	// between its ENTER and EXIT lines. With zero, the critical section is
	// the two log writes alone: the throughput workload, whose sections
	// are too short to overlap in the log often even when exclusion fails.
	// A hold of a millisecond makes any two holders at once overlap, so a
	// run with it is the exclusion check.
	Hold time.Duration
}

// ContendedResult is one run of the contended workload.
type ContendedResult struct {
	Sessions     int           `json:"sessions"`
	Duration     time.Duration `json:"duration_ns"`
	Hold         time.Duration `json:"hold_ns,omitempty"`
	Acquisitions int           `json:"acquisitions"`
	// Throughput is acquisitions per second.
	Throughput float64       `json:"throughput_per_s"`
	HandoffP50 time.Duration `json:"handoff_p50_ns"`
	HandoffP99 time.Duration `json:"handoff_p99_ns"`
	Handoffs   int           `json:"handoffs"`
	// Violations are the times the log shows a holder entering while
	// another was inside.
	Violations int `json:"violations"`
	// ReqPerAcq is the packets the server received per acquisition.
	ReqPerAcq float64 `json:"requests_per_acquisition"`
	// CPU time per acquisition over the measured phase: the server
	// process's, and the clients' (this process for an in-process
	// implementation, the peer process for Curator and kazoo; the
	// benchmark's own log writes included).
	ServerCPUPerAcq time.Duration `json:"server_cpu_per_acquisition_ns"`
	ClientCPUPerAcq time.Duration `json:"client_cpu_per_acquisition_ns"`
	// The server's work per acquisition beside the requests, summed over
	// the servers: the bytes of its replies (zk_response_bytes), the
	// packets it sent (zk_packets_sent: replies, pings' replies and
	// notifications) and of those the watch notifications (packets sent
	// less packets received: every request and ping gets one reply).
	ResponseBytesPerAcq float64 `json:"response_bytes_per_acquisition"`
	PacketsSentPerAcq   float64 `json:"packets_sent_per_acquisition"`
	NotificationsPerAcq float64 `json:"notifications_per_acquisition"`
}

// SetServerWork fills k's per-acquisition server counts from d, the
// servers' counters over its measured phase.
func (k *ContendedResult) SetServerWork(d Counters) {
	n := float64(k.Acquisitions)
	k.ReqPerAcq = Ratio(float64(d.PacketsReceived), n)
	k.ResponseBytesPerAcq = Ratio(float64(d.ResponseBytes), n)
	k.PacketsSentPerAcq = Ratio(float64(d.PacketsSent), n)
	k.NotificationsPerAcq = Ratio(float64(d.PacketsSent-d.PacketsReceived), n)
	k.ServerCPUPerAcq = PerOp(d.ServerCPU, k.Acquisitions)
}

// Contended opens load.Sessions sessions and has each, on its own
// goroutine, acquire, log ENTER, stay load.Hold, log EXIT and release path
// in a loop for load.Duration. The log is checked for exclusion and gives
// the handoff times.
func Contended(ctx context.Context, impl Impl, env Env, path string, load Load) (ContendedResult, error) {
	ls, err := openMany(ctx, impl, env, path, load.Sessions)
	if err != nil {
		return ContendedResult{}, err
	}
	defer closeAll(ls)

	before, err := env.Meter.Read(ctx)
	if err != nil {
		return ContendedResult{}, err
	}
	cpu0, cpuErr := ProcCPU(os.Getpid())
	start := time.Now()
	n, rep, err := runContenders(ctx, ls, start.Add(load.Duration), load.Hold)
	elapsed := time.Since(start)
	cpu1, cerr := ProcCPU(os.Getpid())
	cpuErr = errors.Join(cpuErr, cerr)
	if err != nil {
		return ContendedResult{}, err
	}
	delta, err := env.Meter.Delta(ctx, before)
	if err != nil {
		return ContendedResult{}, err
	}
	k := ContendedResult{
		Sessions: load.Sessions, Duration: elapsed, Hold: load.Hold, Acquisitions: n,
		Throughput: float64(n) / elapsed.Seconds(),
		HandoffP50: Percentile(rep.Handoffs, 0.5), HandoffP99: Percentile(rep.Handoffs, 0.99),
		Handoffs: len(rep.Handoffs), Violations: len(rep.Violations),
		ClientCPUPerAcq: PerOp(clientCPU(cpu1-cpu0, cpuErr), n),
	}
	k.SetServerWork(delta)
	return k, nil
}

// runContenders has each of ls contend until deadline, holding hold each
// time, logging to a shared log it then checks. It returns the
// acquisitions made and the log's report.
func runContenders(ctx context.Context, ls []Locker, deadline time.Time, hold time.Duration) (int, peers.Report, error) {
	logf, err := os.CreateTemp("", "zkbench-contended-*.log")
	if err != nil {
		return 0, peers.Report{}, err
	}
	defer os.Remove(logf.Name())
	defer logf.Close()
	// Every contender appends to one descriptor: each line is one write.
	logf, err = os.OpenFile(logf.Name(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 0, peers.Report{}, err
	}
	defer logf.Close()

	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var acquired atomic.Int64
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = contend(runCtx, l, fmt.Sprintf("g%d", i), hold, logf, &acquired)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, peers.Report{}, err
	}
	rep, err := peers.CheckLog(logf.Name())
	if err != nil {
		return 0, peers.Report{}, err
	}
	return int(acquired.Load()), rep, nil
}

// clientCPU is d, or zero when it could not be measured.
func clientCPU(d time.Duration, err error) time.Duration {
	if err != nil {
		return 0
	}
	return d
}

// contend is one contender's loop; it ends without error when ctx ends.
func contend(ctx context.Context, l Locker, id string, hold time.Duration, logf *os.File, acquired *atomic.Int64) error {
	for ctx.Err() == nil {
		if err := l.Lock(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s: lock: %w", id, err)
		}
		acquired.Add(1)
		if err := logLine(logf, "ENTER "+id+" -"); err != nil {
			return err
		}
		if hold > 0 {
			time.Sleep(hold) // the critical section's work
		}
		if err := logLine(logf, "EXIT "+id); err != nil {
			return err
		}
		// Release on a context of its own: the deadline must not abandon a
		// held lock.
		rctx, cancel := context.WithTimeout(context.Background(), SessionTimeout)
		err := l.Unlock(rctx)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: unlock: %w", id, err)
		}
	}
	return nil
}

// logLine appends "line <unix-nanos>" with one write, as the peers do.
func logLine(f *os.File, line string) error {
	_, err := fmt.Fprintf(f, "%s %d\n", line, time.Now().UnixNano())
	return err
}

// DrainResult is one run of the queue-drain workload.
type DrainResult struct {
	Waiters int           `json:"waiters"`
	Total   time.Duration `json:"total_ns"`
	// PerHandoff is Total / Waiters.
	PerHandoff time.Duration `json:"per_handoff_ns"`
	// BytesPerHandoff is the server's response bytes per handoff.
	BytesPerHandoff float64 `json:"response_bytes_per_handoff"`
	// ReqPerHandoff is the packets the server received per handoff.
	ReqPerHandoff float64 `json:"requests_per_handoff"`
}

// Drain opens n+1 sessions; one holds path while the n others queue behind
// it. Once every waiter is queued and watching, the holder releases, and
// each waiter releases as soon as it holds. It measures from the holder's
// release to the last waiter's grant.
func Drain(ctx context.Context, impl Impl, env Env, path string, n int) (DrainResult, error) {
	ls, err := openMany(ctx, impl, env, path, n+1)
	if err != nil {
		return DrainResult{}, err
	}
	defer closeAll(ls)
	holder, waiters := ls[0], ls[1:]
	if err := holder.Lock(ctx); err != nil {
		return DrainResult{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	granted := make([]time.Time, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, l := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Lock(wctx); err != nil {
				errs[i] = err
				return
			}
			granted[i] = time.Now()
			errs[i] = l.Unlock(ctx)
		}()
	}
	if err := QueueReady(ctx, env, path, n+1, impl.Watches(n)); err != nil {
		cancel()
		wg.Wait()
		return DrainResult{}, err
	}
	before, err := env.Meter.Read(ctx)
	if err != nil {
		cancel()
		wg.Wait()
		return DrainResult{}, err
	}
	t0 := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		cancel()
		wg.Wait()
		return DrainResult{}, err
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return DrainResult{}, err
	}
	delta, err := env.Meter.Delta(ctx, before)
	if err != nil {
		return DrainResult{}, err
	}
	var last time.Time
	for _, g := range granted {
		if g.After(last) {
			last = g
		}
	}
	total := last.Sub(t0)
	return DrainResult{
		Waiters: n, Total: total, PerHandoff: total / time.Duration(n),
		BytesPerHandoff: float64(delta.ResponseBytes) / float64(n),
		ReqPerHandoff:   float64(delta.PacketsReceived) / float64(n),
	}, nil
}

// QueueReady waits until path has nodes children and the server holds at
// least watches watches, unchanged over two readings 100ms apart: every
// waiter has queued and set its watch.
func QueueReady(ctx context.Context, env Env, path string, nodes, watches int) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := int64(-1)
	for {
		kids, _, err := env.Observer.Children(path)
		if err != nil && err != zk.ErrNoNode {
			return err
		}
		c, err := env.Meter.Read(ctx)
		if err != nil {
			return err
		}
		if len(kids) == nodes && c.Watches >= int64(watches) {
			if c.Watches == last {
				return nil
			}
			last = c.Watches
		} else {
			last = -1
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: queue on %s not ready (%d of %d nodes, %d watches): %w", path, len(kids), nodes, c.Watches, ctx.Err())
		case <-tick.C:
		}
	}
}

// openMany opens n lockers, a few at a time.
func openMany(ctx context.Context, impl Impl, env Env, path string, n int) ([]Locker, error) {
	ls := make([]Locker, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ls[i], errs[i] = impl.Open(ctx, env.ServerFor(i), path)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(ls)
		return nil, err
	}
	return ls, nil
}

func closeAll(ls []Locker) {
	var wg sync.WaitGroup
	for _, l := range ls {
		if l != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.Close()
			}()
		}
	}
	wg.Wait()
}
