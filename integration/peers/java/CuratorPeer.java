package zkrecipes.peers;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.imps.DefaultACLProvider;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * A Curator peer for the zkrecipes interoperability tests.
 *
 * <p>One subcommand per recipe; every subcommand appends its acquisitions to a shared log (one
 * O_APPEND write per line) and prints one JSON summary line on stdout. See ../README.md.
 */
public final class CuratorPeer {
    private static final String USAGE =
            "usage: CuratorPeer <mutex|read|write|semaphore|latch|selector|bench-uncontended|bench-contended|bench-drain|bench-workqueue>"
                    + " --servers HOST:PORT[,...] --path /P [--id ID] [--duration 4s] [--count N]"
                    + " [--hold-ms MS] [--max N] [--log FILE] [--session-timeout-ms MS]"
                    + " [--sync true] [--sessions N] [--warmup N] (bench modes; see CuratorBench)"
                    + " [--jaas FILE] (SASL: the JAAS file with a Client section) [--acl SCHEME:ID]";

    /** Exit code for a usage error. */
    private static final int EXIT_USAGE = 2;
    /** Exit code for a runtime error (connection, ZooKeeper, I/O). */
    private static final int EXIT_ERROR = 1;
    /** Exit code when the watchdog had to stop the process after its duration. */
    private static final int EXIT_WATCHDOG = 3;

    private final Map<String, String> flags;
    private final String mode;
    private final String id;
    private final String servers;
    private final String path;
    private final long durationMs;
    /** When the work ends: durationMs after the client connected (a busy machine may take seconds to start Curator and connect). */
    private volatile long deadlineNanos;
    private final long holdMs;
    private final int sessionTimeoutMs;
    private final FileOutputStream log;

    private CuratorFramework client;
    private int acquisitions;
    private int errors;
    private final List<Long> latenciesNanos = new ArrayList<>();
    private final Map<String, Object> extra = new HashMap<>();

    private CuratorPeer(String mode, Map<String, String> flags) throws IOException {
        this.mode = mode;
        this.flags = flags;
        this.servers = require("servers");
        this.path = require("path");
        this.id = flags.getOrDefault("id", "curator-" + ProcessHandle.current().pid());
        this.durationMs = parseDurationMs(flags.getOrDefault("duration", mode.equals("bench-uncontended") ? "60s" : "4s"));
        this.deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(durationMs);
        this.holdMs = Long.parseLong(flags.getOrDefault("hold-ms", "1"));
        this.sessionTimeoutMs = Integer.parseInt(flags.getOrDefault("session-timeout-ms", "10000"));
        String logPath = flags.get("log");
        this.log = logPath == null ? null : new FileOutputStream(logPath, true);
    }

    /** Entry point. */
    public static void main(String[] args) {
        if (args.length < 1 || args[0].startsWith("-")) {
            usage("missing subcommand");
        }
        String mode = args[0];
        Map<String, String> flags = parseFlags(args);
        if (flags.containsKey("jaas")) {
            // SASL: the ZooKeeper client authenticates with the JAAS "Client"
            // section of this file (e.g. DigestLoginModule username/password).
            System.setProperty("java.security.auth.login.config", flags.get("jaas"));
        }
        if (mode.equals("bench-drain") || (mode.startsWith("bench-") && flags.containsKey("sync"))) {
            CuratorBench.main(mode, flags); // exits
            return;
        }
        CuratorPeer peer;
        try {
            peer = new CuratorPeer(mode, flags);
        } catch (IllegalArgumentException e) {
            usage(e.getMessage());
            return;
        } catch (IOException e) {
            fail("open log: " + e);
            return;
        }
        peer.startWatchdog();
        try {
            peer.run();
        } catch (Throwable e) {
            fail(mode + " " + peer.id + ": " + e);
        }
        System.exit(0);
    }

    private void run() throws Exception {
        connect();
        try {
            switch (mode) {
                case "mutex":
                    mutex(false);
                    break;
                case "bench-contended":
                    mutex(false);
                    break;
                case "bench-uncontended":
                    mutex(true);
                    break;
                case "read":
                    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path, id.getBytes(StandardCharsets.UTF_8));
                    loop(rw.readLock(), "RENTER", "REXIT", null);
                    break;
                case "write":
                    InterProcessReadWriteLock rw2 = new InterProcessReadWriteLock(client, path, id.getBytes(StandardCharsets.UTF_8));
                    loop(rw2.writeLock(), "ENTER", "EXIT", null);
                    break;
                case "semaphore":
                    semaphore();
                    break;
                case "latch":
                    latch();
                    break;
                case "selector":
                    selector();
                    break;
                default:
                    usage("unknown subcommand " + mode);
            }
        } finally {
            client.close();
        }
        printSummary();
    }

    private void connect() throws Exception {
        long remaining = remainingMs();
        client = CuratorFrameworkFactory.builder()
                .connectString(servers)
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs((int) Math.max(100, Math.min(remaining, 15000)))
                .retryPolicy(new ExponentialBackoffRetry(50, 5))
                .aclProvider(aclProvider(flags.get("acl")))
                .build();
        client.start();
        if (!client.blockUntilConnected((int) Math.max(1, remaining), TimeUnit.MILLISECONDS)) {
            client.close();
            throw new IOException("could not connect to " + servers + " within " + durationMs + "ms");
        }
        deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(durationMs);
    }

    /**
     * The ACL of every node the peer creates: --acl SCHEME:ID (all permissions), e.g.
     * sasl:alice; ZooKeeper's open ACL without it.
     */
    private static ACLProvider aclProvider(String acl) {
        if (acl == null) {
            return new DefaultACLProvider();
        }
        int colon = acl.indexOf(':');
        if (colon < 1) {
            throw new IllegalArgumentException("--acl must be SCHEME:ID, got " + acl);
        }
        List<ACL> list = Collections.singletonList(
                new ACL(ZooDefs.Perms.ALL, new Id(acl.substring(0, colon), acl.substring(colon + 1))));
        return new ACLProvider() {
            @Override
            public List<ACL> getDefaultAcl() {
                return list;
            }

            @Override
            public List<ACL> getAclForPath(String path) {
                return list;
            }
        };
    }

    /** A driver that remembers the node each acquisition created, for the fencing-token column. */
    private static final class RecordingDriver extends StandardLockInternalsDriver {
        volatile String lastPath = "-";

        @Override
        public String createsTheLock(CuratorFramework client, String path, byte[] lockNodeBytes) throws Exception {
            String p = super.createsTheLock(client, path, lockNodeBytes);
            lastPath = p;
            return p;
        }
    }

    private void mutex(boolean uncontended) throws Exception {
        RecordingDriver driver = new RecordingDriver();
        InterProcessMutex m = new InterProcessMutex(client, path, driver);
        if (!uncontended) {
            loop(m, "ENTER", "EXIT", driver);
            return;
        }
        int count = Integer.parseInt(flags.getOrDefault("count", "1000"));
        for (int i = 0; i < count; i++) {
            if (remainingMs() <= 0) {
                throw new IOException("duration ended after " + i + " of " + count + " cycles");
            }
            long t0 = System.nanoTime();
            if (!m.acquire(remainingMs(), TimeUnit.MILLISECONDS)) {
                throw new IOException("uncontended acquire timed out (is another contender on " + path + "?)");
            }
            m.release();
            latenciesNanos.add(System.nanoTime() - t0);
            acquisitions++;
        }
        extra.put("cycles", count);
    }

    /** Acquire, log, hold, log, release until the duration ends. */
    private void loop(InterProcessLock lock, String enter, String exit, RecordingDriver driver) throws Exception {
        while (remainingMs() > 0) {
            long t0 = System.nanoTime();
            if (!lock.acquire(remainingMs(), TimeUnit.MILLISECONDS)) {
                break;
            }
            latenciesNanos.add(System.nanoTime() - t0);
            acquisitions++;
            try {
                logLine(enter + " " + id + " " + (driver == null ? "-" : token(driver.lastPath)));
                hold();
                logLine(exit + " " + id);
            } finally {
                lock.release();
            }
        }
    }

    private void semaphore() throws Exception {
        int max = Integer.parseInt(require("max"));
        InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, max);
        sem.setNodeData(id.getBytes(StandardCharsets.UTF_8));
        while (remainingMs() > 0) {
            long t0 = System.nanoTime();
            Lease lease = sem.acquire(remainingMs(), TimeUnit.MILLISECONDS);
            if (lease == null) {
                break;
            }
            latenciesNanos.add(System.nanoTime() - t0);
            acquisitions++;
            try {
                logLine("SENTER " + id + " " + token(lease.getNodeName()));
                hold();
                logLine("SEXIT " + id);
            } finally {
                sem.returnLease(lease);
            }
        }
        extra.put("max", max);
    }

    private void latch() throws Exception {
        while (remainingMs() > 0) {
            CountDownLatch lost = new CountDownLatch(1);
            LeaderLatch latch = new LeaderLatch(client, path, id);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                }

                @Override
                public void notLeader() {
                    lost.countDown();
                }
            });
            latch.start();
            long t0 = System.nanoTime();
            try {
                if (!latch.await(remainingMs(), TimeUnit.MILLISECONDS)) {
                    break;
                }
                latenciesNanos.add(System.nanoTime() - t0);
                acquisitions++;
                logLine("LEAD " + id + " " + token(latch.getOurPath()));
                boolean wasLost = lost.await(holdMs, TimeUnit.MILLISECONDS);
                logLine("UNLEAD " + id);
                if (wasLost) {
                    errors++;
                    System.err.println("latch " + id + ": leadership lost while held");
                }
            } finally {
                latch.close(LeaderLatch.CloseMode.SILENT);
            }
        }
    }

    private void selector() throws Exception {
        final Object lock = this;
        LeaderSelector sel = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                long t = System.nanoTime();
                synchronized (lock) {
                    acquisitions++;
                }
                logLine("LEAD " + id + " -");
                try {
                    long hold = Math.min(holdMs, Math.max(0, remainingMs()));
                    Thread.sleep(hold);
                } finally {
                    logLine("UNLEAD " + id);
                    synchronized (lock) {
                        latenciesNanos.add(System.nanoTime() - t);
                    }
                }
            }
        });
        sel.setId(id);
        sel.autoRequeue();
        sel.start();
        try {
            Thread.sleep(Math.max(0, remainingMs()));
        } finally {
            sel.close();
        }
    }

    private void hold() throws InterruptedException {
        if (holdMs > 0) {
            Thread.sleep(holdMs);
        }
    }

    /** The text after the last "lock-" / "latch-" / "lease-", i.e. the sequence suffix. */
    private static String token(String node) {
        if (node == null) {
            return "-";
        }
        int slash = node.lastIndexOf('/');
        String name = node.substring(slash + 1);
        int dash = name.lastIndexOf('-');
        return dash >= 0 && dash + 1 < name.length() ? name.substring(dash + 1) : name;
    }

    private synchronized void logLine(String line) throws IOException {
        if (log == null) {
            return;
        }
        String full = line + " " + wallNanos() + "\n";
        log.write(full.getBytes(StandardCharsets.UTF_8)); // one write(2) per line, O_APPEND
    }

    /** Wall-clock Unix time in nanoseconds (microsecond resolution), comparable across processes. */
    private static long wallNanos() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    private long remainingMs() {
        return TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
    }

    private void startWatchdog() {
        // Long enough that only a stuck peer meets it: at load 28 a peer took more than
        // the 5 s this was before to finish its last cycle and close its client.
        long grace = Math.max(30000, 2 * holdMs + sessionTimeoutMs / 2);
        Thread t = new Thread(() -> {
            try {
                for (long left; (left = remainingMs() + grace) > 0; ) {
                    Thread.sleep(left); // the deadline moves once, when the client connects
                }
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("watchdog: " + mode + " " + id + " still running " + grace + "ms after its duration");
            Runtime.getRuntime().halt(EXIT_WATCHDOG);
        }, "watchdog");
        t.setDaemon(true);
        t.start();
    }

    private void printSummary() {
        List<Long> l;
        synchronized (this) {
            l = new ArrayList<>(latenciesNanos);
        }
        Collections.sort(l);
        int acq;
        synchronized (this) {
            acq = acquisitions;
        }
        StringBuilder sb = new StringBuilder();
        sb.append("{\"peer\":\"curator\",\"mode\":\"").append(mode).append("\",\"id\":").append(quote(id));
        sb.append(",\"acquisitions\":").append(acq).append(",\"errors\":").append(errors);
        sb.append(",\"samples\":").append(l.size());
        sb.append(",\"p50_us\":").append(percentileMicros(l, 0.50));
        sb.append(",\"p99_us\":").append(percentileMicros(l, 0.99));
        sb.append(",\"max_us\":").append(l.isEmpty() ? 0 : l.get(l.size() - 1) / 1000);
        for (Map.Entry<String, Object> e : extra.entrySet()) {
            sb.append(",").append(quote(e.getKey())).append(":");
            Object v = e.getValue();
            sb.append(v instanceof Number ? v.toString() : quote(String.valueOf(v)));
        }
        sb.append("}");
        System.out.println(sb);
        System.out.flush();
    }

    private static long percentileMicros(List<Long> sorted, double q) {
        if (sorted.isEmpty()) {
            return 0;
        }
        int idx = (int) Math.ceil(q * sorted.size()) - 1;
        idx = Math.max(0, Math.min(sorted.size() - 1, idx));
        return sorted.get(idx) / 1000;
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    private String require(String name) {
        String v = flags.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }

    private static Map<String, String> parseFlags(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                usage("unexpected argument " + a);
            }
            String k = a.substring(2);
            String v;
            int eq = k.indexOf('=');
            if (eq >= 0) {
                v = k.substring(eq + 1);
                k = k.substring(0, eq);
            } else {
                if (i + 1 >= args.length) {
                    usage("flag --" + k + " needs a value");
                }
                v = args[++i];
            }
            m.put(k, v);
        }
        return m;
    }

    private static final Pattern DURATION = Pattern.compile("^(\\d+(?:\\.\\d+)?)(ms|s|m)?$");

    /** Parses "500ms", "4s", "1.5s", "2m" or a bare number of seconds. */
    static long parseDurationMs(String s) {
        Matcher m = DURATION.matcher(s);
        if (!m.matches()) {
            throw new IllegalArgumentException("bad duration " + s);
        }
        double v = Double.parseDouble(m.group(1));
        String unit = m.group(2) == null ? "s" : m.group(2);
        switch (unit) {
            case "ms":
                return (long) v;
            case "m":
                return (long) (v * 60_000);
            default:
                return (long) (v * 1000);
        }
    }

    private static void usage(String msg) {
        System.err.println("CuratorPeer: " + msg);
        System.err.println(USAGE);
        System.exit(EXIT_USAGE);
    }

    private static void fail(String msg) {
        System.err.println("CuratorPeer: error: " + msg);
        System.err.flush();
        Runtime.getRuntime().halt(EXIT_ERROR);
    }
}
