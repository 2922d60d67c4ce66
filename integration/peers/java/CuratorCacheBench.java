package zkrecipes.peers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.zookeeper.data.Stat;

/**
 * Curator's CuratorCache on the tree of zkrecipes' BenchmarkTreeCache10k (ROOT/cNNN/gNNN,
 * 100 x 99 under the root), measured as the Go side measures its TreeCache:
 *
 * <pre>
 * SERVERS ROOT WRITES   prints one JSON line: load_ms (start until initialized),
 *                       heap_b_per_node (used heap after the load, less the lower of
 *                       before it and after the cache's close, after full GCs, divided
 *                       by the cached nodes), p50_ns / p99_ns of write -> change event
 *                       over WRITES writes of random nodes, one at a time
 * </pre>
 */
public final class CuratorCacheBench {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CuratorCacheBench SERVERS ROOT WRITES");
            System.exit(2);
        }
        String servers = args[0], root = args[1];
        int writes = Integer.parseInt(args[2]);
        CuratorFramework client = Peers.connect(servers), writer = Peers.connect(servers);
        List<String> paths = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            String c = String.format("%s/c%03d", root, i);
            paths.add(c);
            for (int j = 0; j < 99; j++) {
                paths.add(String.format("%s/g%03d", c, j));
            }
        }
        long before = usedHeap();
        BlockingQueue<ChildData> changes = new LinkedBlockingQueue<>();
        CountDownLatch initialized = new CountDownLatch(1);
        long t0 = System.nanoTime();
        CuratorCache cache = CuratorCache.build(client, root);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forChanges((oldNode, node) -> changes.offer(node))
                .forInitialized(initialized::countDown)
                .build());
        cache.start();
        if (!initialized.await(5, TimeUnit.MINUTES)) {
            System.err.println("not initialized");
            System.exit(1);
        }
        long loadNs = System.nanoTime() - t0;
        int size = cache.size();
        long after = usedHeap();

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
        cache.close();
        cache = null;
        changes.clear();
        long closed = usedHeap();
        System.err.printf("heap: before %d, loaded %d, after close %d%n", before, after, closed);
        System.out.printf("{\"impl\":\"curator-cache\",\"nodes\":%d,\"load_ms\":%d,\"heap_b_per_node\":%.0f,\"p50_ns\":%d,\"p99_ns\":%d}%n",
                size, loadNs / 1_000_000, (double) (after - Math.min(before, closed)) / size,
                lat[writes / 2], lat[Math.min(writes - 1, (int) Math.ceil(writes * 0.99) - 1)]);
        writer.close();
        client.close();
    }

    private static long usedHeap() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
