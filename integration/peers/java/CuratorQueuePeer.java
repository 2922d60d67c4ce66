package zkrecipes.peers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;

/**
 * A Curator SimpleDistributedQueue peer for the zkrecipes queue interoperability tests and
 * benchmark.
 *
 * <pre>
 * CuratorQueuePeer offer   SERVERS PATH COUNT PREFIX  offers PREFIX-0 .. PREFIX-(COUNT-1) in order
 * CuratorQueuePeer take    SERVERS PATH COUNT         takes COUNT items with take()
 * CuratorQueuePeer consume SERVERS PATH               prints "READY", then polls until its standard input closes
 * CuratorQueuePeer bench   SERVERS PATH COUNT         offers COUNT items, then takes them; then
 *                                                     COUNT times offers one item and takes it
 * </pre>
 *
 * <p>Every item taken is printed as "ITEM text" (items are UTF-8 text); the last line is "DONE n"
 * (or, for bench, one JSON line).
 */
public final class CuratorQueuePeer {
    private CuratorQueuePeer() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CuratorQueuePeer <offer|take|consume|bench> SERVERS PATH [COUNT] [PREFIX]");
            System.exit(2);
        }
        String mode = args[0];
        CuratorFramework client = Peers.connect(args[1]);
        try {
            SimpleDistributedQueue q = new SimpleDistributedQueue(client, args[2]);
            switch (mode) {
                case "offer":
                    offer(q, Integer.parseInt(args[3]), args[4]);
                    break;
                case "take":
                    take(q, Integer.parseInt(args[3]));
                    break;
                case "consume":
                    consume(q);
                    break;
                case "bench":
                    bench(q, Integer.parseInt(args[3]));
                    break;
                default:
                    System.err.println("unknown mode " + mode);
                    System.exit(2);
            }
        } finally {
            client.close();
        }
    }

    private static void offer(SimpleDistributedQueue q, int n, String prefix) throws Exception {
        for (int i = 0; i < n; i++) {
            q.offer((prefix + "-" + i).getBytes(StandardCharsets.UTF_8));
        }
        System.out.println("DONE " + n);
    }

    private static void take(SimpleDistributedQueue q, int n) throws Exception {
        for (int i = 0; i < n; i++) {
            System.out.println("ITEM " + new String(q.take(), StandardCharsets.UTF_8));
        }
        System.out.println("DONE " + n);
    }

    /** Takes items until standard input reaches its end. */
    private static void consume(SimpleDistributedQueue q) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (r.readLine() != null) {
                    // only the end matters
                }
            } catch (Exception ignored) {
                // end of input either way
            }
            stop.set(true);
        });
        reader.setDaemon(true);
        reader.start();
        System.out.println("READY");
        System.out.flush();
        int n = 0;
        while (!stop.get()) {
            byte[] b = q.poll(100, TimeUnit.MILLISECONDS);
            if (b != null) {
                System.out.println("ITEM " + new String(b, StandardCharsets.UTF_8));
                System.out.flush();
                n++;
            }
        }
        System.out.println("DONE " + n);
    }

    /** Offers n items, then takes them; then n times offers one and takes it; prints rates and take latencies. */
    private static void bench(SimpleDistributedQueue q, int n) throws Exception {
        byte[] item = "0123456789abcdef".getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < Math.min(n, 200); i++) { // warm-up
            q.offer(item);
            q.take();
        }
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            q.offer(item);
        }
        long offerNs = System.nanoTime() - start;
        long[] lat = new long[n];
        start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            q.take();
            lat[i] = System.nanoTime() - t;
        }
        long takeNs = System.nanoTime() - start;
        Arrays.sort(lat);
        // One item at a time: offer, then take it.
        long[] one = new long[n];
        start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            q.offer(item);
            long t = System.nanoTime();
            q.take();
            one[i] = System.nanoTime() - t;
        }
        long oneNs = System.nanoTime() - start;
        Arrays.sort(one);
        System.out.printf(
                "{\"offer_per_s\":%.0f,\"take_per_s\":%.0f,\"take_p50_us\":%d,\"take_p99_us\":%d,"
                        + "\"one_pairs_per_s\":%.0f,\"one_take_p50_us\":%d,\"one_take_p99_us\":%d}%n",
                n / (offerNs / 1e9), n / (takeNs / 1e9), lat[n / 2] / 1000, lat[(int) (n * 0.99)] / 1000,
                n / (oneNs / 1e9), one[n / 2] / 1000, one[(int) (n * 0.99)] / 1000);
    }
}
