package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// BenchmarkTreeCache10k: a TreeCache of a tree of 10,001 nodes (a root,
// 100 children, 99 grandchildren each, 32 bytes of data per node), once
// whatever b.N is. Reported: the time Start takes to load it
// (load-ms), the heap it adds per node with its 10,001 initial events
// still queued (heap-B/node-queued) and once they are read
// (heap-B/node; the cache, its session's watch registrations and the
// data), and the time from a write to its NodeChanged event over 1,000
// writes of random nodes, one at a time (write-event p50/p99). For
// scale, zk-watch-B/node is what a data and a children watch per node cost
// in go-zookeeper alone (its watch registry), on a plain connection, and
// raw-load-ms the time those 20,000 reads take there from 32 goroutines:
// the floor of the load. server-watches is what the cache adds to the
// server's watch count (mntr; the peers': the peak over their run);
// burst-converge-* how long after the writer's last reply of a burst of
// 1,000 creates and 1,000 deletes under one node a TreeCache (on its
// persistent watch, and on one-shot watches) and a raw go-zookeeper client
// doing the least work hold the final children: raw holds their data too
// (a children watch, a listing each time it fires, a getData of each new
// child), raw-names-only only their names (median of 5;
// treecache_burst_test.go). burst-converge-x-raw is the TreeCache's over
// raw's.
func BenchmarkTreeCache10k(b *testing.B) {
	e := env(b)
	ctx := ctxFor(b, 10*time.Minute)
	root := benchPath(b)
	acl := zk.WorldACL(zk.PermAll)
	conn := e.Observer
	if err := ensurePath(conn, root); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 32)
	var paths []string
	var ops []any
	flush := func() {
		if _, err := conn.Multi(ops...); err != nil {
			b.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := range 100 {
		p := fmt.Sprintf("%s/c%03d", root, i)
		ops = append(ops, &zk.CreateRequest{Path: p, Data: data, Acl: acl})
		paths = append(paths, p)
		for j := range 99 {
			q := fmt.Sprintf("%s/g%03d", p, j)
			ops = append(ops, &zk.CreateRequest{Path: q, Data: data, Acl: acl})
			paths = append(paths, q)
		}
		flush()
	}
	s := openSessions(b, e, 1)[0]

	watches0 := serverWatches(b, e)
	var before, queued, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := zr.NewTreeCache(s, root)
	t0 := time.Now()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	load := time.Since(t0)
	watches := serverWatches(b, e) - watches0
	n := c.Len()
	if n != len(paths)+1 {
		b.Fatalf("cached %d nodes, want %d", n, len(paths)+1)
	}
	runtime.GC()
	runtime.ReadMemStats(&queued)
	for ev := range c.Events() {
		if ev.Kind == zr.CacheInitialized {
			break
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)

	r := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, 0, 1000)
	b.ResetTimer()
	for i := range 1000 {
		p := paths[r.IntN(len(paths))]
		t0 := time.Now()
		st, err := conn.Set(p, []byte(fmt.Sprint(i)), -1)
		if err != nil {
			b.Fatal(err)
		}
		for ev := range c.Events() {
			if ev.Node != nil && ev.Node.Path == p && ev.Node.Stat.Mzxid >= st.Mzxid {
				break
			}
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	_ = c.Close(ctx)
	watchHeap, rawLoad := rawWatchHeap(b, e, paths)
	b.ReportMetric(float64(load.Milliseconds()), "load-ms")
	b.ReportMetric(float64(queued.HeapAlloc-before.HeapAlloc)/float64(n), "heap-B/node-queued")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-B/node")
	b.ReportMetric(watchHeap, "zk-watch-B/node")
	b.ReportMetric(float64(rawLoad.Milliseconds()), "raw-load-ms")
	b.ReportMetric(float64(Percentile(lat, 0.5)), "write-event-p50-ns")
	b.ReportMetric(float64(Percentile(lat, 0.99)), "write-event-p99-ns")
	b.ReportMetric(float64(watches), "server-watches")
	b.ReportMetric(0, "ns/op")
	curatorCache(b, e, root)
	kazooCache(b, e, root)

	reportBurst(b, e)
}

// BenchmarkTreeCacheBurst: the burst part of BenchmarkTreeCache10k alone
// (see there), once whatever b.N is.
func BenchmarkTreeCacheBurst(b *testing.B) {
	e := env(b)
	b.ReportMetric(0, "ns/op")
	reportBurst(b, e)
}

// reportBurst measures and reports the burst convergence of a TreeCache in
// both modes and of a raw client.
func reportBurst(b *testing.B, e Env) {
	burst := burstConvergence(b, e, map[string]burstObserver{
		"zkrecipes":          treeCacheObserver(e),
		"zkrecipes-one-shot": treeCacheObserver(e, zr.WithWireLayer(false)),
		"raw":                rawDataObserver(e),
		"raw-names-only":     rawChildrenObserver(e),
	})
	b.ReportMetric(float64(burst["zkrecipes"].Microseconds())/1000, "burst-converge-ms")
	b.ReportMetric(float64(burst["zkrecipes-one-shot"].Microseconds())/1000, "burst-converge-one-shot-ms")
	b.ReportMetric(float64(burst["raw"].Microseconds())/1000, "burst-converge-raw-ms")
	b.ReportMetric(float64(burst["raw-names-only"].Microseconds())/1000, "burst-converge-raw-names-only-ms")
	if burst["raw"] > 0 {
		b.ReportMetric(float64(burst["zkrecipes"])/float64(burst["raw"]), "burst-converge-x-raw")
	}
}

// serverWatches reads the watches the shared server holds (mntr's
// zk_watch_count: data and child watches of every session; a persistent
// recursive watch counts as two on ZooKeeper 3.6 to 3.8).
func serverWatches(b *testing.B, e Env) int64 {
	ctx := ctxFor(b, 10*time.Second)
	c, err := ReadCounters(ctx, e.Servers[0])
	if err != nil {
		b.Fatal(err)
	}
	return c.Watches
}

// peakWatches samples the server's watch count every 100 ms until the
// returned function is called, which returns the highest count seen above
// the one at the start: what a peer's cache costs the server.
func peakWatches(b *testing.B, e Env) (stop func() int64) {
	base := serverWatches(b, e)
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var top int64
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if c, err := ReadCounters(ctx, e.Servers[0]); err == nil {
					top = max(top, c.Watches-base)
				}
				cancel()
			case <-done:
				peak <- top
				return
			}
		}
	}()
	return func() int64 { close(done); return <-peak }
}

// kazooScript measures kazoo's TreeCache as the Go side measures its own:
// argv: servers, root, writes; prints one JSON line.
const kazooScript = `
import gc, json, os, queue, random, sys, time
from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent
servers, root, writes = sys.argv[1], sys.argv[2], int(sys.argv[3])
paths = []
for i in range(100):
    c = "%s/c%03d" % (root, i)
    paths.append(c)
    paths.extend("%s/g%03d" % (c, j) for j in range(99))
client, writer = KazooClient(hosts=servers), KazooClient(hosts=servers)
client.start(30); writer.start(30)
def rss():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
before = rss()
events, initialized = queue.Queue(), queue.Queue()
def on(ev):
    if ev.event_type == TreeEvent.INITIALIZED:
        initialized.put(True)
    elif ev.event_type == TreeEvent.NODE_UPDATED:
        events.put(ev.event_data)
t0 = time.perf_counter()
cache = TreeCache(client, root)
cache.listen(on)
cache.start()
initialized.get(timeout=300)
load = time.perf_counter() - t0
after = rss()
r = random.Random(1)
lat = []
for i in range(writes):
    p = paths[r.randrange(len(paths))]
    w0 = time.perf_counter()
    st = writer.set(p, str(i).encode())
    while True:
        d = events.get(timeout=30)
        if d.path == p and d.stat.mzxid >= st.mzxid:
            break
    lat.append(time.perf_counter() - w0)
lat.sort()
print(json.dumps({"impl": "kazoo-treecache", "nodes": len(paths) + 1, "load_ms": int(load * 1000),
    "heap_b_per_node": (after - before) / (len(paths) + 1),
    "p50_ns": int(lat[len(lat) // 2] * 1e9), "p99_ns": int(lat[min(len(lat) - 1, int(len(lat) * 0.99 + 0.999) - 1)] * 1e9)}))
cache.close(); writer.stop(); client.stop()
`

// kazooCache runs kazoo's TreeCache on the same tree in a Python process
// (Debian's python3-kazoo; memory is the growth of the process's resident
// set over the load, after a collection); without kazoo it reports
// nothing.
func kazooCache(b *testing.B, e Env, root string) {
	if err := peers.Available(peers.Kazoo); err != nil {
		b.Logf("kazoo unavailable, no comparison: %v", err)
		return
	}
	python := "/usr/bin/python3"
	if p := os.Getenv("ZKRECIPES_PYTHON"); p != "" {
		python = p
	}
	script := filepath.Join(b.TempDir(), "kazoo_cache_bench.py")
	if err := os.WriteFile(script, []byte(kazooScript), 0o644); err != nil {
		b.Fatal(err)
	}
	stop := peakWatches(b, e)
	r := runPeerBench(b, "kazoo", python, script, strings.Join(e.Servers, ","), root, "1000")
	b.ReportMetric(float64(stop()), "kazoo-server-watches")
	b.ReportMetric(r.LoadMS, "kazoo-load-ms")
	b.ReportMetric(r.HeapPerNode, "kazoo-heap-B/node")
	b.ReportMetric(r.P50NS, "kazoo-write-event-p50-ns")
	b.ReportMetric(r.P99NS, "kazoo-write-event-p99-ns")
}

// peerBench is the JSON line the Curator and kazoo cache benchmarks print.
type peerBench struct {
	Nodes       int     `json:"nodes"`
	LoadMS      float64 `json:"load_ms"`
	HeapPerNode float64 `json:"heap_b_per_node"`
	P50NS       float64 `json:"p50_ns"`
	P99NS       float64 `json:"p99_ns"`
}

// runPeerBench runs a peer's cache benchmark and parses its JSON line.
func runPeerBench(b *testing.B, name string, argv ...string) peerBench {
	ctx := ctxFor(b, 10*time.Minute)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s cache bench: %v: %s", name, err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		b.Logf("%s: %s", name, s)
	}
	var r peerBench
	line := strings.TrimSpace(string(out))
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		b.Fatalf("%s cache bench: %v: %q", name, err, line)
	}
	b.Logf("%s: %s", name, line)
	return r
}

// curatorCache runs Curator's CuratorCache on the same tree in a peer
// process (peers/java/CuratorCacheBench.java), measured the same way, and
// reports its figures beside ours; without Curator it reports nothing.
func curatorCache(b *testing.B, e Env, root string) {
	if err := peers.Available(peers.Curator); err != nil {
		b.Logf("Curator unavailable, no comparison: %v", err)
		return
	}
	ctx := ctxFor(b, 10*time.Minute)
	cp, err := peers.BuildJava(ctx)
	if err != nil {
		b.Fatal(err)
	}
	stop := peakWatches(b, e)
	r := runPeerBench(b, "curator", "java", "-XX:+UseSerialGC", "-Xmx1g", "-cp", cp, "zkrecipes.peers.CuratorCacheBench",
		strings.Join(e.Servers, ","), root, "1000")
	b.ReportMetric(float64(stop()), "curator-server-watches")
	b.ReportMetric(r.LoadMS, "curator-load-ms")
	b.ReportMetric(r.HeapPerNode, "curator-heap-B/node")
	b.ReportMetric(r.P50NS, "curator-write-event-p50-ns")
	b.ReportMetric(r.P99NS, "curator-write-event-p99-ns")
}

// rawWatchHeap sets a data and a children watch on every path from a plain
// go-zookeeper connection and returns the heap that adds per path, and the
// time the reads took.
func rawWatchHeap(b *testing.B, e Env, paths []string) (float64, time.Duration) {
	ctx := ctxFor(b, time.Minute)
	conn, err := ConnectRaw(ctx, e.Servers)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(paths); i += 32 {
				_, _, _, _ = conn.GetW(paths[i])
				_, _, _, _ = conn.ChildrenW(paths[i])
			}
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(conn)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(len(paths)), took
}
