package peers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// zkServers starts a ZooKeeper for the test through zktest (or attaches to
// ZK_SERVERS) and returns its connect string. zktest skips the test when no
// backend is available locally and fails it when env CI is set.
func zkServers(t *testing.T) string {
	t.Helper()
	c := zktest.Start(t)
	s := c.ConnectString()
	if err := LoopbackOnly(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// peerSpec is one contender of a run.
type peerSpec struct {
	kind  string
	mode  string
	id    string
	extra []string
}

// mayStarve: kazoo's read-write lock can stall a whole run (kazoo #649), so
// zero acquisitions there is logged, not an error.
func (s peerSpec) mayStarve() bool {
	return s.kind == Kazoo && (s.mode == "read" || s.mode == "write")
}

type runResult struct {
	report    Report
	summaries map[string]Summary // by id
}

// runPeers starts every spec on one path and one shared log, waits for all of
// them and checks the log.
func runPeers(t *testing.T, servers, path string, duration time.Duration, holdMs int, specs []peerSpec, opts ...CheckOption) runResult {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "shared.log")
	procs := make([]*Process, len(specs))
	for i, s := range specs {
		args := append([]string{s.mode,
			"--servers", servers, "--path", path, "--id", s.id,
			"--duration", duration.String(), "--hold-ms", strconv.Itoa(holdMs),
			"--log", logPath}, s.extra...)
		procs[i] = Start(t, s.kind, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration+90*time.Second)
	defer cancel()
	res := runResult{summaries: map[string]Summary{}}
	for i, p := range procs {
		sum, err := p.Wait(ctx)
		if err != nil {
			t.Errorf("peer %s: %v", specs[i].id, err)
			continue
		}
		res.summaries[specs[i].id] = sum
		t.Logf("%-8s %-6s %-4s acquisitions=%4d wait p50=%6dus p99=%6dus", specs[i].kind, specs[i].mode, specs[i].id,
			sum.Acquisitions, sum.P50Micros, sum.P99Micros)
	}
	rep, err := CheckLog(logPath, opts...)
	if err != nil {
		t.Fatalf("CheckLog: %v", err)
	}
	res.report = rep
	t.Logf("log: %d lines, max concurrent %d (writers %d, readers %d, leases %d, leaders %d), %d handoffs p50=%v p99=%v",
		rep.Lines, rep.MaxConcurrent, rep.MaxWriters, rep.MaxReaders, rep.MaxLeases, rep.MaxLeaders,
		len(rep.Handoffs), Percentile(rep.Handoffs, 0.5), Percentile(rep.Handoffs, 0.99))
	if len(rep.Open) > 0 {
		t.Errorf("holders never exited: %q", rep.Open)
	}
	for _, s := range specs {
		if n := rep.Acquisitions[s.id]; n < 1 && s.mayStarve() {
			t.Logf("%s %s never acquired", s.kind, s.id)
		} else if n < 1 {
			t.Errorf("%s %s never acquired (log has %d acquisitions for it)", s.kind, s.id, n)
		}
		if sum, ok := res.summaries[s.id]; ok && sum.Acquisitions != rep.Acquisitions[s.id] {
			t.Errorf("%s: summary says %d acquisitions, log has %d", s.id, sum.Acquisitions, rep.Acquisitions[s.id])
		}
	}
	return res
}

func requireNoViolations(t *testing.T, rep Report) {
	t.Helper()
	if len(rep.Violations) == 0 {
		return
	}
	shown := rep.Violations
	if len(shown) > 20 {
		shown = shown[:20]
	}
	t.Errorf("%d violations, first: \n%s", len(rep.Violations), strings.Join(shown, "\n"))
}

func uniquePath(t *testing.T) string {
	return fmt.Sprintf("/zkrecipes-peers/%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

const (
	runFor = 4 * time.Second
	holdMs = 1
)

// kazooCompat makes kazoo count Curator-style and go-zookeeper nodes ("...-lock-<seq>") as contenders.
var kazooCompat = []string{"--extra-lock-pattern", "-lock-"}

// TestMutexCuratorGozk: Curator sorts by the text after the last "lock-", and
// go-zookeeper's nodes are _c_<hex>-lock-<seq>; go-zookeeper parses the sequence
// after "lock-". Both see one queue ordered by sequence.
func TestMutexCuratorGozk(t *testing.T) {
	servers := zkServers(t)
	res := runPeers(t, servers, uniquePath(t), runFor, holdMs, []peerSpec{
		{Curator, "mutex", "c1", nil}, {Curator, "mutex", "c2", nil},
		{Gozk, "mutex", "g1", nil}, {Gozk, "mutex", "g2", nil},
	})
	requireNoViolations(t, res.report)
	if res.report.MaxWriters > 1 {
		t.Errorf("max writers inside = %d", res.report.MaxWriters)
	}
}

// TestMutexKazooGozk: kazoo with extra_lock_patterns=["-lock-"] sees go-zookeeper's
// nodes; go-zookeeper parses kazoo's "__lock__<seq>" sequence.
func TestMutexKazooGozk(t *testing.T) {
	servers := zkServers(t)
	res := runPeers(t, servers, uniquePath(t), runFor, holdMs, []peerSpec{
		{Kazoo, "mutex", "k1", kazooCompat}, {Kazoo, "mutex", "k2", kazooCompat},
		{Gozk, "mutex", "g1", nil}, {Gozk, "mutex", "g2", nil},
	})
	requireNoViolations(t, res.report)
}

// TestMutexEachPeerAlone proves each peer against itself, on a path of its own.
func TestMutexEachPeerAlone(t *testing.T) {
	servers := zkServers(t)
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var extra []string
			if kind == Kazoo {
				extra = kazooCompat
			}
			res := runPeers(t, servers, uniquePath(t), runFor, holdMs, []peerSpec{
				{kind, "mutex", kind[:1] + "1", extra}, {kind, "mutex", kind[:1] + "2", extra},
			})
			requireNoViolations(t, res.report)
		})
	}
}

func TestReadWriteCurator(t *testing.T) {
	servers := zkServers(t)
	// Hold 20 ms so that two readers overlap often; the writer keeps them honest.
	res := runPeers(t, servers, uniquePath(t), runFor, 20, []peerSpec{
		{Curator, "write", "w1", nil},
		{Curator, "read", "r1", nil}, {Curator, "read", "r2", nil},
	})
	requireNoViolations(t, res.report)
	if res.report.MaxReaders < 2 {
		t.Errorf("max readers inside at once = %d, want >= 2 (readers never overlapped)", res.report.MaxReaders)
	}
	if res.report.MaxWriters != 1 {
		t.Errorf("max writers inside at once = %d, want 1", res.report.MaxWriters)
	}
}

// TestReadWriteKazoo checks exclusion only. kazoo 2.8's ReadLock can deadlock with
// a second writer (kazoo #649: a reader takes the last writer of all, even a later
// one, as its predecessor, and that writer waits for the reader); here the stall
// lasts until the writer peer's acquire times out at the end of its duration, so
// readers are not required to overlap.
func TestReadWriteKazoo(t *testing.T) {
	servers := zkServers(t)
	res := runPeers(t, servers, uniquePath(t), runFor, 20, []peerSpec{
		{Kazoo, "write", "w1", nil},
		{Kazoo, "read", "r1", nil}, {Kazoo, "read", "r2", nil},
	})
	requireNoViolations(t, res.report)
	if res.report.Lines == 0 {
		t.Error("no kazoo read or write lock was ever acquired")
	}
	for _, id := range []string{"r1", "r2"} {
		if s, ok := res.summaries[id]; ok && s.MaxMicros > 1_000_000 {
			t.Logf("reader %s waited %v once: kazoo #649 reader/writer deadlock, broken by the writer's timeout",
				id, time.Duration(s.MaxMicros)*time.Microsecond)
		}
	}
}

func TestSemaphoreCurator(t *testing.T) {
	servers := zkServers(t)
	const maxLeases = 2
	max := []string{"--max", strconv.Itoa(maxLeases)}
	res := runPeers(t, servers, uniquePath(t), runFor, 10, []peerSpec{
		{Curator, "semaphore", "s1", max}, {Curator, "semaphore", "s2", max},
		{Curator, "semaphore", "s3", max}, {Curator, "semaphore", "s4", max},
	}, MaxLeases(maxLeases))
	requireNoViolations(t, res.report)
	if res.report.MaxLeases > maxLeases {
		t.Errorf("max leases inside = %d, want <= %d", res.report.MaxLeases, maxLeases)
	}
	if res.report.MaxLeases < maxLeases {
		t.Logf("note: only %d leases were ever held at once", res.report.MaxLeases)
	}
}

func TestLeaderCurator(t *testing.T) {
	servers := zkServers(t)
	for _, mode := range []string{"latch", "selector"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			res := runPeers(t, servers, uniquePath(t), runFor, 50, []peerSpec{
				{Curator, mode, "l1", nil}, {Curator, mode, "l2", nil}, {Curator, mode, "l3", nil},
			})
			requireNoViolations(t, res.report)
			if res.report.MaxLeaders != 1 {
				t.Errorf("max leaders at once = %d, want 1", res.report.MaxLeaders)
			}
		})
	}
}

// TestBenchPeers runs each bench subcommand briefly, to keep them working; the
// benchmarks proper live elsewhere.
func TestBenchPeers(t *testing.T) {
	servers := zkServers(t)
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p := Start(t, kind, "bench-uncontended", "--servers", servers, "--path", uniquePath(t), "--count", "200", "--duration", "60s")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sum, err := p.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Acquisitions != 200 || sum.Cycles != 200 || sum.P50Micros <= 0 || sum.P99Micros < sum.P50Micros {
				t.Errorf("summary %+v: want 200 cycles and sane percentiles", sum)
			}
			t.Logf("%s bench-uncontended: 200 cycles, p50=%dus p99=%dus", kind, sum.P50Micros, sum.P99Micros)
		})
	}
}

// TestPeerCannotConnect: a peer facing no server exits non-zero within its duration.
func TestPeerCannotConnect(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			// Port 1 on loopback: nothing listens there.
			p := Start(t, kind, "mutex", "--servers", "127.0.0.1:1", "--path", "/nowhere", "--duration", "1s")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := p.Wait(ctx)
			if err == nil {
				t.Fatal("want an error from a peer that cannot connect")
			}
			if !strings.Contains(err.Error(), "could not connect") {
				t.Errorf("error %q does not say it could not connect", err)
			}
			// 1 s of duration plus process start-up (the JVM takes the longest).
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %v to give up", d)
			}
		})
	}
}

// TestMutexForeignOrderUnsafe proves, deterministically, the two pairings that
// do NOT interoperate (DESIGN.md §3), and so that the checker catches a real
// overlap: a holder takes the lock and keeps it; once its ENTER is in the log an
// intruder starts on the same path and gets in anyway.
//   - Curator sorts a kazoo node ("<hex>__lock__<seq>", no "lock-") by its random
//     hex, after every "…-lock-<seq>" node, even with kazoo's extra pattern set.
//   - kazoo without extra_lock_patterns ignores Curator's nodes altogether.
func TestMutexForeignOrderUnsafe(t *testing.T) {
	servers := zkServers(t)
	cases := []struct {
		name     string
		holder   peerSpec
		intruder peerSpec
	}{
		{"curator ignores kazoo", peerSpec{Kazoo, "mutex", "k1", kazooCompat}, peerSpec{Curator, "mutex", "c1", nil}},
		{"kazoo without pattern ignores curator", peerSpec{Curator, "mutex", "c1", nil}, peerSpec{Kazoo, "mutex", "k1", nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := uniquePath(t)
			logPath := filepath.Join(t.TempDir(), "shared.log")
			common := []string{"--servers", servers, "--path", path, "--log", logPath}
			// The holder acquires once and keeps the lock for 8 s (its
			// duration bounds its connect too: a JVM on a busy machine can
			// take more than a second to get there).
			holder := Start(t, tc.holder.kind, append(append([]string{tc.holder.mode, "--id", tc.holder.id,
				"--duration", "5s", "--hold-ms", "8000"}, common...), tc.holder.extra...)...)
			waitForLine(t, logPath, "ENTER "+tc.holder.id+" ", holder)
			intruder := Start(t, tc.intruder.kind, append(append([]string{tc.intruder.mode, "--id", tc.intruder.id,
				"--duration", "5s", "--hold-ms", "1"}, common...), tc.intruder.extra...)...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for _, p := range []*Process{intruder, holder} {
				if _, err := p.Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := CheckLog(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Violations) == 0 {
				t.Fatalf("no overlap detected; log has %d lines, acquisitions %v", rep.Lines, rep.Acquisitions)
			}
			t.Logf("%d violations as expected, first: %s", len(rep.Violations), rep.Violations[0])
		})
	}
}

// waitForLine polls the log until a line starts with prefix; it fails the test
// if the peer exits first or a minute passes.
func waitForLine(t *testing.T, logPath, prefix string, p *Process) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		b, _ := os.ReadFile(logPath)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, prefix) {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("peer %s exited before logging %q: %s", p.Kind, prefix, tail(p.Stderr(), 2000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q line in %s after a minute", prefix, logPath)
		}
	}
}
