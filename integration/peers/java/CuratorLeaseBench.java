package zkrecipes.peers;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.management.ObjectName;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;

/**
 * Leases held on one Curator session for zkbench's lease curve (bench.HeldLeases, kind "curator"):
 * n InterProcessMutexes on n paths of one CuratorFramework, each acquired once and held until
 * standard input closes. Driven from Go by one command a line, one answer a line ("ERR ..." on
 * failure), after a first line "READY":
 *
 * <pre>
 * SERVERS DIR SESSION_TIMEOUT_MS
 *     connects, acquires and releases DIR/warm once, prints READY, then answers:
 * hold N     acquires the leases DIR/e0 .. DIR/e(N-1), 50 threads, each on its own path; "OK"
 *            once every one is held and the acquiring threads have ended.
 * cost       {"heap":B,"live":L,"threads":T}: the used heap after full GCs (System.gc() three
 *            times, 100 ms apart); the bytes of the live objects, the total of the class
 *            histogram the JVM takes after a full GC (jcmd's GC.class_histogram); and the JVM's
 *            live threads. The used heap is off by up to a megabyte here: after the client's
 *            start it counts about a megabyte that a later GC frees, so that 1,000 held leases
 *            measured ~13 B/lease by it, and ~1,090 B/lease by the histogram.
 * nodes      ["/DIR/e0/...", ...]: each lease's lock node, in lease order.
 * ended      [i, ...]: the leases this process was told may have ended: a LOST connection state
 *            since the lease was acquired (under Curator's default error policy the only such
 *            news; a lost connection alone releases nothing), or its mutex not held any more.
 * session    the session id of the client's ZooKeeper handle, in decimal.
 * arm        "OK"; remembers the connections seen so far, before a fault.
 * back MS    waits, MS milliseconds at most, for a CONNECTED or RECONNECTED state after the
 *            last arm, and answers the session id then.
 * </pre>
 *
 * The client closes, ending its session, when standard input closes.
 */
public final class CuratorLeaseBench {
    private static final int ACQUIRERS = 50;
    private static final long ACQUIRE_LIMIT_S = 120;

    /** An InterProcessMutex that tells its lock node, to the thread that acquired it. */
    private static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String node() {
            return getLockPath();
        }
    }

    /** A held lease: its mutex, its lock node, and the LOST states seen before it was held. */
    private static final class Lease {
        final Mutex mutex;
        final String node;
        final int lossesBefore;

        Lease(Mutex mutex, String node, int lossesBefore) {
            this.mutex = mutex;
            this.node = node;
            this.lossesBefore = lossesBefore;
        }
    }

    private final CuratorFramework client;
    private final String dir;
    private final Object states = new Object();
    private int connections; // CONNECTED and RECONNECTED states seen, under states
    private int losses; // LOST states seen, under states
    private int armed; // connections at the last arm, under states
    private Lease[] leases = new Lease[0];

    private CuratorLeaseBench(CuratorFramework client, String dir) {
        this.client = client;
        this.dir = dir;
        client.getConnectionStateListenable().addListener((c, s) -> {
            synchronized (states) {
                if (s == ConnectionState.CONNECTED || s == ConnectionState.RECONNECTED) {
                    connections++;
                } else if (s == ConnectionState.LOST) {
                    losses++;
                }
                states.notifyAll();
            }
        });
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CuratorLeaseBench SERVERS DIR SESSION_TIMEOUT_MS");
            System.exit(2);
        }
        CuratorFramework client = Peers.connect(args[0], Integer.parseInt(args[2]), 5);
        CuratorLeaseBench b = new CuratorLeaseBench(client, args[1]);
        Mutex warm = new Mutex(client, args[1] + "/warm");
        warm.acquire();
        warm.release();
        Peers.serve(b::run);
        client.close();
        System.exit(0);
    }

    private String run(String[] w) throws Exception {
        switch (w[0]) {
            case "hold":
                hold(Integer.parseInt(w[1]));
                return "OK";
            case "cost":
                return String.format("{\"heap\":%d,\"live\":%d,\"threads\":%d}", usedHeap(), liveBytes(),
                        ManagementFactory.getThreadMXBean().getThreadCount());
            case "nodes":
                return nodes();
            case "ended":
                return ended();
            case "session":
                return sessionId();
            case "arm":
                synchronized (states) {
                    armed = connections;
                }
                return "OK";
            case "back":
                back(Long.parseLong(w[1]));
                return sessionId();
            default:
                throw new IllegalArgumentException("unknown command " + String.join(" ", w));
        }
    }

    /** Acquires n leases, ACQUIRERS threads taking the next lease not taken yet. */
    private void hold(int n) throws Exception {
        if (leases.length > 0) {
            throw new IllegalStateException(leases.length + " leases held already");
        }
        Lease[] ls = new Lease[n];
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Exception> failed = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < Math.min(ACQUIRERS, n); t++) {
            Thread th = new Thread(() -> {
                for (int i = next.getAndIncrement(); i < n && failed.get() == null; i = next.getAndIncrement()) {
                    try {
                        ls[i] = acquire(dir + "/e" + i);
                    } catch (Exception e) {
                        failed.compareAndSet(null, e);
                    }
                }
            });
            th.start();
            threads.add(th);
        }
        for (Thread th : threads) {
            th.join();
        }
        if (failed.get() != null) {
            throw failed.get();
        }
        leases = ls;
    }

    private Lease acquire(String path) throws Exception {
        int before;
        synchronized (states) {
            before = losses;
        }
        Mutex m = new Mutex(client, path);
        if (!m.acquire(ACQUIRE_LIMIT_S, TimeUnit.SECONDS)) {
            throw new TimeoutException(path + " not acquired within " + ACQUIRE_LIMIT_S + " s");
        }
        return new Lease(m, m.node(), before);
    }

    private String nodes() {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < leases.length; i++) {
            b.append(i == 0 ? "\"" : ",\"").append(leases[i].node).append('"');
        }
        return b.append(']').toString();
    }

    private String ended() {
        int lost;
        synchronized (states) {
            lost = losses;
        }
        StringBuilder b = new StringBuilder("[");
        String sep = "";
        for (int i = 0; i < leases.length; i++) {
            if (leases[i].lossesBefore < lost || !leases[i].mutex.isAcquiredInThisProcess()) {
                b.append(sep).append(i);
                sep = ",";
            }
        }
        return b.append(']').toString();
    }

    private void back(long ms) throws Exception {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        synchronized (states) {
            while (connections <= armed) {
                long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
                if (left <= 0) {
                    throw new TimeoutException("not connected again within " + ms + " ms");
                }
                states.wait(left);
            }
        }
    }

    private String sessionId() throws Exception {
        return Long.toString(client.getZookeeperClient().getZooKeeper().getSessionId());
    }

    /** The total bytes of the JVM's class histogram of its live objects (a full GC first). */
    private static long liveBytes() throws Exception {
        String h = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcClassHistogram",
                new Object[] {new String[0]}, new String[] {String[].class.getName()});
        String[] lines = h.trim().split("\n");
        String[] total = lines[lines.length - 1].trim().split("\\s+");
        if (total.length != 3 || !total[0].equals("Total")) {
            throw new IllegalStateException("no Total line in the class histogram: " + lines[lines.length - 1]);
        }
        return Long.parseLong(total[2]);
    }

    private static long usedHeap() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
