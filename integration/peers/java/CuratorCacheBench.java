package zkrecipes.peers;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.zookeeper.data.Stat;

/**
 * Curator's CuratorCache of the tree at ROOT, whatever its shape, measured as the Go side
 * measures its TreeCache (BenchmarkTreeCache10k, and zkbench's cache curve):
 *
 * <pre>
 * SERVERS ROOT WRITES [NODES LIMIT_S]
 *     prints one JSON line: nodes (cached), load_ms (start until initialized),
 *     heap_b_per_node (used heap after the load, less the lower of before it and after
 *     the cache's close, after full GCs, divided by the cached nodes), exceptions (what
 *     the cache's exception handler received) and first_exception, and, with WRITES above
 *     0, p50_ns / p99_ns of write -> change event over WRITES writes of random cached
 *     nodes below ROOT, one at a time.
 *     With NODES (the nodes expected) and LIMIT_S: a cache not initialized within LIMIT_S
 *     seconds, or initialized with other than NODES nodes, prints
 *     {"initialized":false or true,"nodes":...,"expected":...,"exceptions":...,
 *     "first_exception":...} and exits with status 3. Without them the limit is 5 minutes.
 * </pre>
 */
public final class CuratorCacheBench {
    public static void main(String[] args) throws Exception {
        if (args.length != 3 && args.length != 5) {
            System.err.println("usage: CuratorCacheBench SERVERS ROOT WRITES [NODES LIMIT_S]");
            System.exit(2);
        }
        String servers = args[0], root = args[1];
        int writes = Integer.parseInt(args[2]);
        int expected = args.length == 5 ? Integer.parseInt(args[3]) : -1;
        long limitS = args.length == 5 ? Long.parseLong(args[4]) : 300;
        CuratorFramework client = Peers.connect(servers);
        long before = usedHeap();
        BlockingQueue<ChildData> changes = new LinkedBlockingQueue<>();
        CountDownLatch initialized = new CountDownLatch(1);
        AtomicInteger exceptions = new AtomicInteger();
        AtomicReference<String> first = new AtomicReference<>();
        long t0 = System.nanoTime();
        CuratorCache cache = CuratorCache.builder(client, root)
                .withExceptionHandler(e -> {
                    exceptions.incrementAndGet();
                    first.compareAndSet(null, e.toString());
                })
                .build();
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forChanges((oldNode, node) -> changes.offer(node))
                .forInitialized(initialized::countDown)
                .build());
        cache.start();
        boolean done = initialized.await(limitS, TimeUnit.SECONDS);
        long loadNs = System.nanoTime() - t0;
        int size = cache.size();
        String errs = String.format("\"exceptions\":%d,\"first_exception\":\"%s\"", exceptions.get(), json(first.get()));
        if (!done || (expected >= 0 && size != expected)) {
            System.out.printf("{\"impl\":\"curator-cache\",\"initialized\":%b,\"nodes\":%d,\"expected\":%d,\"load_ms\":%d,%s}%n",
                    done, size, expected, loadNs / 1_000_000, errs);
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }
        long after = usedHeap();

        String lat = "";
        if (writes > 0) {
            lat = writeLatencies(servers, cache, root, changes, writes);
        }
        cache.close();
        cache = null;
        changes.clear();
        long closed = usedHeap();
        System.err.printf("heap: before %d, loaded %d, after close %d%n", before, after, closed);
        System.out.printf("{\"impl\":\"curator-cache\",\"initialized\":true,\"nodes\":%d,\"load_ms\":%d,\"heap_b_per_node\":%.0f,%s%s}%n",
                size, loadNs / 1_000_000, (double) (after - Math.min(before, closed)) / size, errs, lat);
        client.close();
    }

    /**
     * Sets the data of writes random cached nodes below root, one at a time from a client of
     * its own, each timed until the cache's change event; returns ",p50_ns:...,p99_ns:...".
     */
    private static String writeLatencies(String servers, CuratorCache cache, String root,
            BlockingQueue<ChildData> changes, int writes) throws Exception {
        List<String> paths = cache.stream().map(ChildData::getPath).filter(p -> !p.equals(root))
                .sorted().collect(Collectors.toList());
        CuratorFramework writer = Peers.connect(servers);
        Random r = new Random(1);
        long[] lat = new long[writes];
        for (int i = 0; i < writes; i++) {
            String p = paths.get(r.nextInt(paths.size()));
            long w0 = System.nanoTime();
            Stat st = writer.setData().forPath(p, String.valueOf(i).getBytes(StandardCharsets.UTF_8));
            while (true) {
                ChildData d = changes.poll(30, TimeUnit.SECONDS);
                if (d == null) {
                    System.err.println("no change event for " + p);
                    System.exit(1);
                }
                if (d.getPath().equals(p) && d.getStat().getMzxid() >= st.getMzxid()) {
                    break;
                }
            }
            lat[i] = System.nanoTime() - w0;
        }
        java.util.Arrays.sort(lat);
        writer.close();
        return String.format(",\"p50_ns\":%d,\"p99_ns\":%d",
                lat[writes / 2], lat[Math.min(writes - 1, (int) Math.ceil(writes * 0.99) - 1)]);
    }

    /** s escaped for a JSON string ("" for null). */
    static String json(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(' ');
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /** The used heap after three full GCs (100 ms apart). */
    static long usedHeap() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
