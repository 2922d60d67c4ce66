package zkrecipes.peers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.io.Closeable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.state.ConnectionState;

/**
 * A Curator DistributedQueue peer for the zkrecipes WorkQueue interoperability tests.
 *
 * <pre>
 * CuratorWorkQueuePeer put     SERVERS PATH COUNT PREFIX [BATCH]  puts PREFIX-0 .. PREFIX-(COUNT-1), one
 *                                                                 put each, then (BATCH &gt; 0) one putMulti
 *                                                                 of PREFIX-batch-0 .. PREFIX-batch-(BATCH-1)
 * CuratorWorkQueuePeer putprio  SERVERS PATH P:ITEM ...          DistributedPriorityQueue.put(ITEM, P) each
 * CuratorWorkQueuePeer putdelay SERVERS PATH MS:ITEM ...         DistributedDelayQueue.put(ITEM, now + MS) each,
 *                                                                 printing "DUE ITEM epoch-ms"
 * CuratorWorkQueuePeer putid    SERVERS PATH ID:ITEM ...         DistributedIdQueue.put(ITEM, ID) each (ID up
 *                                                                 to the first colon)
 * CuratorWorkQueuePeer removeid SERVERS PATH LOCKPATH ID ...     DistributedIdQueue.remove(ID) each, on a queue
 *                                                                 with a lock path, printing "REMOVED ID n"
 * CuratorWorkQueuePeer consume SERVERS PATH LOCKPATH [KIND]       a consumer with a lock path, of a
 *                                                                 DistributedQueue (KIND plain, the default),
 *                                                                 DistributedPriorityQueue (priority),
 *                                                                 DistributedDelayQueue (delay) or
 *                                                                 DistributedIdQueue (id): prints
 *                                                                 "READY", then every item it consumes,
 *                                                                 until its standard input closes
 * </pre>
 *
 * <p>Items are UTF-8 text; each one consumed is printed as "ITEM text", then "TIME text
 * epoch-ms"; the last line is "DONE n".
 */
public final class CuratorWorkQueuePeer {
    private CuratorWorkQueuePeer() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: CuratorWorkQueuePeer <put|putprio|putdelay|putid|removeid|consume> SERVERS PATH ...");
            System.exit(2);
        }
        CuratorFramework client = Peers.connect(args[1]);
        try {
            switch (args[0]) {
                case "put":
                    put(client, args[2], Integer.parseInt(args[3]), args[4],
                            args.length > 5 ? Integer.parseInt(args[5]) : 0);
                    break;
                case "putprio":
                    putPriority(client, args[2], Arrays.copyOfRange(args, 3, args.length));
                    break;
                case "putdelay":
                    putDelay(client, args[2], Arrays.copyOfRange(args, 3, args.length));
                    break;
                case "putid":
                    putId(client, args[2], Arrays.copyOfRange(args, 3, args.length));
                    break;
                case "removeid":
                    removeId(client, args[2], args[3], Arrays.copyOfRange(args, 4, args.length));
                    break;
                case "consume":
                    consume(client, args[2], args[3], args.length > 4 ? args[4] : "plain");
                    break;
                default:
                    System.err.println("unknown mode " + args[0]);
                    System.exit(2);
            }
        } finally {
            client.close();
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void put(CuratorFramework client, String path, int n, String prefix, int batch)
            throws Exception {
        DistributedQueue<byte[]> q = QueueBuilder.builder(client, null, Peers.BYTES, path)
                .putInBackground(false)
                .buildQueue();
        q.start();
        try {
            for (int i = 0; i < n; i++) {
                q.put(utf8(prefix + "-" + i));
            }
            if (batch > 0) {
                List<byte[]> items = new ArrayList<>();
                for (int i = 0; i < batch; i++) {
                    items.add(utf8(prefix + "-batch-" + i));
                }
                final int[] next = {0};
                q.putMulti(new MultiItem<byte[]>() {
                    @Override
                    public byte[] nextItem() {
                        return next[0] < items.size() ? items.get(next[0]++) : null;
                    }
                });
            }
        } finally {
            q.close();
        }
        System.out.println("DONE " + (n + batch));
    }

    private static void putPriority(CuratorFramework client, String path, String[] items) throws Exception {
        DistributedPriorityQueue<byte[]> q = QueueBuilder.builder(client, null, Peers.BYTES, path)
                .putInBackground(false)
                .buildPriorityQueue(0);
        q.start();
        try {
            for (String it : items) {
                int colon = it.indexOf(':');
                q.put(utf8(it.substring(colon + 1)), Integer.parseInt(it.substring(0, colon)));
            }
        } finally {
            q.close();
        }
        System.out.println("DONE " + items.length);
    }

    private static void putDelay(CuratorFramework client, String path, String[] items) throws Exception {
        DistributedDelayQueue<byte[]> q = QueueBuilder.builder(client, null, Peers.BYTES, path)
                .putInBackground(false)
                .buildDelayQueue();
        q.start();
        try {
            for (String it : items) {
                int colon = it.indexOf(':');
                String text = it.substring(colon + 1);
                long due = System.currentTimeMillis() + Long.parseLong(it.substring(0, colon));
                q.put(utf8(text), due);
                System.out.println("DUE " + text + " " + due);
            }
        } finally {
            q.close();
        }
        System.out.println("DONE " + items.length);
    }

    private static void putId(CuratorFramework client, String path, String[] items) throws Exception {
        DistributedIdQueue<byte[]> q = QueueBuilder.builder(client, null, Peers.BYTES, path)
                .putInBackground(false)
                .buildIdQueue();
        q.start();
        try {
            for (String it : items) {
                int colon = it.indexOf(':');
                q.put(utf8(it.substring(colon + 1)), it.substring(0, colon));
            }
        } finally {
            q.close();
        }
        System.out.println("DONE " + items.length);
    }

    /** Removes the items of each id, locking them under lockPath as its consumers do. */
    private static void removeId(CuratorFramework client, String path, String lockPath, String[] ids) throws Exception {
        DistributedIdQueue<byte[]> q = QueueBuilder.builder(client, null, Peers.BYTES, path)
                .lockPath(lockPath)
                .buildIdQueue();
        q.start();
        try {
            for (String id : ids) {
                System.out.println("REMOVED " + id + " " + q.remove(id));
            }
        } finally {
            q.close();
        }
        System.out.println("DONE " + ids.length);
    }

    /** Consumes items under locks in lockPath until standard input reaches its end. */
    private static void consume(CuratorFramework client, String path, String lockPath, String kind) throws Exception {
        AtomicInteger n = new AtomicInteger();
        QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
            @Override
            public void consumeMessage(byte[] message) {
                synchronized (System.out) {
                    String text = new String(message, StandardCharsets.UTF_8);
                    System.out.println("ITEM " + text);
                    System.out.println("TIME " + text + " " + System.currentTimeMillis());
                    System.out.flush();
                }
                n.incrementAndGet();
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        QueueBuilder<byte[]> b = QueueBuilder.builder(client, consumer, Peers.BYTES, path).lockPath(lockPath);
        Closeable q;
        switch (kind) {
            case "priority":
                DistributedPriorityQueue<byte[]> pq = b.buildPriorityQueue(0);
                pq.start();
                q = pq;
                break;
            case "delay":
                DistributedDelayQueue<byte[]> dq = b.buildDelayQueue();
                dq.start();
                q = dq;
                break;
            case "id":
                DistributedIdQueue<byte[]> iq = b.buildIdQueue();
                iq.start();
                q = iq;
                break;
            default:
                DistributedQueue<byte[]> plain = b.buildQueue();
                plain.start();
                q = plain;
        }
        synchronized (System.out) {
            System.out.println("READY");
            System.out.flush();
        }
        try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            while (r.readLine() != null) {
                // only the end matters
            }
        }
        q.close();
        System.out.println("DONE " + n.get());
    }
}
