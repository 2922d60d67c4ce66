package zkrecipes.peers;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * The synchronised benchmark modes of the Curator peer (flag --sync, and bench-drain), driven by
 * the zkbench runner through stdin: after its set-up the peer prints "READY id" and waits for a
 * line on stdin; it then runs the measured phase, prints its JSON summary and waits for the end
 * of stdin before it closes its sessions, so that the runner reads the server's counters around
 * the measured phase only. Every session is its own CuratorFramework.
 */
final class CuratorBench {
    private final String mode;
    private final String servers;
    private final String path;
    private final String id;
    private final int sessions;
    private final int count;
    private final int warmup;
    private final long durationMs;
    private final long holdNs;
    private final int sessionTimeoutMs;
    private final FileOutputStream log;
    private final BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    private final List<CuratorFramework> clients = new ArrayList<>();

    private CuratorBench(String mode, Map<String, String> flags) throws IOException {
        this.mode = mode;
        this.servers = need(flags, "servers");
        this.path = need(flags, "path");
        this.id = flags.getOrDefault("id", "curator-" + ProcessHandle.current().pid());
        this.sessions = Integer.parseInt(flags.getOrDefault("sessions", "1"));
        this.count = Integer.parseInt(flags.getOrDefault("count", "1000"));
        this.warmup = Integer.parseInt(flags.getOrDefault("warmup", "0"));
        this.durationMs = CuratorPeer.parseDurationMs(flags.getOrDefault("duration", "4s"));
        this.holdNs = TimeUnit.MICROSECONDS.toNanos(Long.parseLong(flags.getOrDefault("hold-us", "0")));
        this.sessionTimeoutMs = Integer.parseInt(flags.getOrDefault("session-timeout-ms", "10000"));
        String logPath = flags.get("log");
        this.log = logPath == null ? null : new FileOutputStream(logPath, true);
    }

    /** Runs a synchronised bench mode and exits the process. */
    static void main(String mode, Map<String, String> flags) {
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(TimeUnit.MINUTES.toMillis(10));
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("CuratorBench: watchdog: still running after 10 minutes");
            Runtime.getRuntime().halt(3);
        }, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        try {
            new CuratorBench(mode, flags).run();
        } catch (Throwable e) {
            System.err.println("CuratorBench: error: " + mode + ": " + e);
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }
        System.exit(0);
    }

    private void run() throws Exception {
        try {
            switch (mode) {
                case "bench-uncontended":
                    uncontended();
                    break;
                case "bench-contended":
                    contended();
                    break;
                case "bench-drain":
                    drain();
                    break;
                case "bench-workqueue":
                    workQueue();
                    break;
                default:
                    throw new IllegalArgumentException("no synchronised mode " + mode);
            }
            while (stdin.readLine() != null) {
                // the runner closes stdin once it has read the server's counters
            }
        } finally {
            for (CuratorFramework c : clients) {
                c.close();
            }
        }
    }

    /** Connects n more sessions; the k-th session of the run (k from 0) is given server k mod the count of --servers, as zkbench places its own. */
    private void connect(int n) throws Exception {
        List<CuratorFramework> fresh = new ArrayList<>();
        String[] hosts = servers.split(",");
        for (int i = 0; i < n; i++) {
            CuratorFramework c = CuratorFrameworkFactory.builder()
                    .connectString(hosts[clients.size() % hosts.length])
                    .sessionTimeoutMs(sessionTimeoutMs)
                    .connectionTimeoutMs(15000)
                    .retryPolicy(new ExponentialBackoffRetry(50, 5))
                    .build();
            c.start();
            fresh.add(c);
            clients.add(c);
        }
        for (CuratorFramework c : fresh) {
            if (!c.blockUntilConnected(60, TimeUnit.SECONDS)) {
                throw new IOException("could not connect to " + servers);
            }
        }
    }

    private void readyAndWait() throws IOException {
        System.out.println("READY " + id);
        System.out.flush();
        if (stdin.readLine() == null) {
            throw new IOException("stdin closed before the start line");
        }
    }

    private void uncontended() throws Exception {
        connect(1);
        InterProcessMutex m = new InterProcessMutex(clients.get(0), path);
        for (int i = 0; i < warmup; i++) {
            m.acquire();
            m.release();
        }
        readyAndWait();
        List<Long> lat = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            long t0 = System.nanoTime();
            m.acquire();
            m.release();
            lat.add(System.nanoTime() - t0);
        }
        Collections.sort(lat);
        summary(count, lat, "\"cycles\":" + count);
    }

    private void contended() throws Exception {
        connect(sessions);
        readyAndWait();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(durationMs);
        AtomicInteger acquired = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Long> waits = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int k = 0; k < sessions; k++) {
            InterProcessMutex m = new InterProcessMutex(clients.get(k), path);
            String who = id + "-" + k;
            Thread t = new Thread(() -> {
                try {
                    while (true) {
                        long left = deadline - System.nanoTime();
                        if (left <= 0) {
                            return;
                        }
                        long t0 = System.nanoTime();
                        if (!m.acquire(left, TimeUnit.NANOSECONDS)) {
                            return;
                        }
                        waits.add(System.nanoTime() - t0);
                        acquired.incrementAndGet();
                        try {
                            logLine("ENTER " + who + " -");
                            hold();
                            logLine("EXIT " + who);
                        } finally {
                            m.release();
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, who);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            throw new IOException("contender failed", failure.get());
        }
        List<Long> l = new ArrayList<>(waits);
        Collections.sort(l);
        summary(acquired.get(), l, "\"sessions\":" + sessions);
    }

    /** Stays inside the critical section for --hold-us (bench-contended; 0 by default). */
    private void hold() {
        long end = System.nanoTime() + holdNs;
        for (long left = holdNs; left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    private void drain() throws Exception {
        connect(sessions + 1);
        InterProcessMutex holder = new InterProcessMutex(clients.get(0), path);
        holder.acquire();
        CountDownLatch done = new CountDownLatch(sessions);
        AtomicLong last = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int k = 1; k <= sessions; k++) {
            InterProcessMutex m = new InterProcessMutex(clients.get(k), path);
            Thread t = new Thread(() -> {
                try {
                    m.acquire();
                    long now = System.nanoTime();
                    last.accumulateAndGet(now, Math::max);
                    m.release();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                } finally {
                    done.countDown();
                }
            }, id + "-" + k);
            t.setDaemon(true);
            t.start();
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (clients.get(0).getChildren().forPath(path).size() < sessions + 1) {
            if (System.nanoTime() > until) {
                throw new IOException("waiters did not queue within 120s");
            }
            Thread.sleep(20);
        }
        readyAndWait();
        long t0 = System.nanoTime();
        holder.release();
        if (!done.await(5, TimeUnit.MINUTES)) {
            throw new IOException("drain did not finish");
        }
        if (failure.get() != null) {
            throw new IOException("waiter failed", failure.get());
        }
        long total = last.get() - t0;
        summary(sessions, Collections.emptyList(),
                "\"handoffs\":" + sessions + ",\"total_ns\":" + total + ",\"per_handoff_ns\":" + total / sessions);
    }

    private synchronized void logLine(String line) throws IOException {
        if (log == null) {
            return;
        }
        java.time.Instant now = java.time.Instant.now();
        long ns = now.getEpochSecond() * 1_000_000_000L + now.getNano();
        log.write((line + " " + ns + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Consumes the --count items put on the DistributedQueue at --path beforehand, with --sessions
     * consumers, each a DistributedQueue with the lock path PATH-locks on its own session, started
     * on the start line; the time runs until the last item is deleted (Curator deletes an item
     * after its consumeMessage returns: once every item was consumed, the peer lists the queue
     * every millisecond until it is empty).
     */
    private void workQueue() throws Exception {
        connect(sessions);
        CountDownLatch consumed = new CountDownLatch(count);
        QueueSerializer<byte[]> bytes = new QueueSerializer<byte[]>() {
            @Override
            public byte[] serialize(byte[] item) {
                return item;
            }

            @Override
            public byte[] deserialize(byte[] b) {
                return b;
            }
        };
        QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
            @Override
            public void consumeMessage(byte[] message) {
                consumed.countDown();
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        List<DistributedQueue<byte[]>> queues = new ArrayList<>();
        for (CuratorFramework c : clients) {
            queues.add(QueueBuilder.builder(c, consumer, bytes, path).lockPath(path + "-locks").buildQueue());
        }
        readyAndWait();
        long t0 = System.nanoTime();
        for (DistributedQueue<byte[]> q : queues) {
            q.start();
        }
        if (!consumed.await(5, TimeUnit.MINUTES)) {
            throw new IOException((count - consumed.getCount()) + " of " + count + " items consumed in 5 minutes");
        }
        while (!clients.get(0).getChildren().forPath(path).isEmpty()) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        long total = System.nanoTime() - t0;
        System.out.println("{\"peer\":\"curator\",\"mode\":\"" + mode + "\",\"id\":\"" + id + "\",\"acquisitions\":" + count
                + ",\"errors\":0,\"total_ns\":" + total + "}");
        System.out.flush();
        while (stdin.readLine() != null) {
            // the runner closes stdin once it has read the server's counters
        }
        for (DistributedQueue<byte[]> q : queues) {
            q.close();
        }
    }

    private void summary(int acquisitions, List<Long> sorted, String extra) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\"peer\":\"curator\",\"mode\":\"").append(mode).append("\",\"id\":\"").append(id).append('"');
        sb.append(",\"acquisitions\":").append(acquisitions).append(",\"errors\":0");
        sb.append(",\"samples\":").append(sorted.size());
        sb.append(",\"p50_us\":").append(pct(sorted, 0.50));
        sb.append(",\"p99_us\":").append(pct(sorted, 0.99));
        sb.append(",\"max_us\":").append(sorted.isEmpty() ? 0 : sorted.get(sorted.size() - 1) / 1000);
        sb.append(",\"p50_ns\":").append(pctNanos(sorted, 0.50));
        sb.append(",\"p99_ns\":").append(pctNanos(sorted, 0.99));
        sb.append(',').append(extra).append('}');
        System.out.println(sb);
        System.out.flush();
    }

    private static long pctNanos(List<Long> sorted, double q) {
        if (sorted.isEmpty()) {
            return 0;
        }
        int i = (int) Math.ceil(q * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }

    private static long pct(List<Long> sorted, double q) {
        return pctNanos(sorted, q) / 1000;
    }

    private static String need(Map<String, String> flags, String name) {
        String v = flags.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }
}
