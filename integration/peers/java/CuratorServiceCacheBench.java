package zkrecipes.peers;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;

/**
 * Curator's curator-x-discovery ServiceCache of one service, measured as zkbench's service
 * curve measures zkrecipes' discovery ServiceCache (the JSON line of CuratorCacheBench):
 *
 * <pre>
 * SERVERS BASEPATH NAME INSTANCES LIMIT_S
 *     prints one JSON line: nodes (the instances the cache holds once started), load_ms
 *     (start until its start returns, the initial load done), heap_b_per_node (used heap
 *     after the load, less the lower of before it and after the cache's close, after full
 *     GCs, divided by the instances), and exceptions / first_exception: the unhandled
 *     errors the client reported and the connection's suspensions and losses.
 *     A cache not started within LIMIT_S seconds, or holding other than INSTANCES instances,
 *     prints {"initialized":false or true,"nodes":...,"expected":...,...} and exits with
 *     status 3.
 * </pre>
 */
public final class CuratorServiceCacheBench {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: CuratorServiceCacheBench SERVERS BASEPATH NAME INSTANCES LIMIT_S");
            System.exit(2);
        }
        String servers = args[0], base = args[1], name = args[2];
        int expected = Integer.parseInt(args[3]);
        long limitS = Long.parseLong(args[4]);
        CuratorFramework client = Peers.connect(servers);
        AtomicInteger exceptions = new AtomicInteger();
        AtomicReference<String> first = new AtomicReference<>();
        client.getUnhandledErrorListenable().addListener((message, e) -> {
            exceptions.incrementAndGet();
            first.compareAndSet(null, message + ": " + e);
        });
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                exceptions.incrementAndGet();
                first.compareAndSet(null, "connection " + state);
            }
        });
        ServiceDiscovery<Map> sd = ServiceDiscoveryBuilder.builder(Map.class).client(client).basePath(base).build();
        sd.start();
        long before = CuratorCacheBench.usedHeap();
        long t0 = System.nanoTime();
        ServiceCache<Map> cache = sd.serviceCacheBuilder().name(name).build();
        CountDownLatch started = cache.startImmediate();
        boolean done = started.await(limitS, TimeUnit.SECONDS);
        long loadNs = System.nanoTime() - t0;
        int size = cache.getInstances().size();
        String errs = String.format("\"exceptions\":%d,\"first_exception\":\"%s\",\"exceptions_from\":\"its client's listeners\"",
                exceptions.get(), CuratorCacheBench.json(first.get()));
        if (!done || size != expected) {
            System.out.printf("{\"impl\":\"curator-service-cache\",\"initialized\":%b,\"nodes\":%d,\"expected\":%d,\"load_ms\":%d,%s}%n",
                    done, size, expected, loadNs / 1_000_000, errs);
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }
        long after = CuratorCacheBench.usedHeap();
        cache.close();
        cache = null;
        long closed = CuratorCacheBench.usedHeap();
        System.err.printf("heap: before %d, loaded %d, after close %d%n", before, after, closed);
        System.out.printf("{\"impl\":\"curator-service-cache\",\"initialized\":true,\"nodes\":%d,\"load_ms\":%d,\"heap_b_per_node\":%.0f,%s}%n",
                size, loadNs / 1_000_000, (double) (after - Math.min(before, closed)) / size, errs);
        sd.close();
        client.close();
    }
}
