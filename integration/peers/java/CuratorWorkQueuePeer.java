package zkrecipes.peers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;

/**
 * A Curator DistributedQueue peer for the zkrecipes WorkQueue interoperability tests.
 *
 * <pre>
 * CuratorWorkQueuePeer put     SERVERS PATH COUNT PREFIX [BATCH]  puts PREFIX-0 .. PREFIX-(COUNT-1), one
 *                                                                 put each, then (BATCH &gt; 0) one putMulti
 *                                                                 of PREFIX-batch-0 .. PREFIX-batch-(BATCH-1)
 * CuratorWorkQueuePeer consume SERVERS PATH LOCKPATH              a consumer with a lock path: prints
 *                                                                 "READY", then every item it consumes,
 *                                                                 until its standard input closes
 * </pre>
 *
 * <p>Items are UTF-8 text; each one consumed is printed as "ITEM text", and the last line is
 * "DONE n".
 */
public final class CuratorWorkQueuePeer {
    private CuratorWorkQueuePeer() {}

    /** Items are the bytes as given. */
    private static final QueueSerializer<byte[]> BYTES = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) {
            return item;
        }

        @Override
        public byte[] deserialize(byte[] bytes) {
            return bytes;
        }
    };

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: CuratorWorkQueuePeer <put|consume> SERVERS PATH ...");
            System.exit(2);
        }
        CuratorFramework client = Peers.connect(args[1]);
        try {
            switch (args[0]) {
                case "put":
                    put(client, args[2], Integer.parseInt(args[3]), args[4],
                            args.length > 5 ? Integer.parseInt(args[5]) : 0);
                    break;
                case "consume":
                    consume(client, args[2], args[3]);
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
        DistributedQueue<byte[]> q = QueueBuilder.builder(client, null, BYTES, path)
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

    /** Consumes items under locks in lockPath until standard input reaches its end. */
    private static void consume(CuratorFramework client, String path, String lockPath) throws Exception {
        AtomicInteger n = new AtomicInteger();
        QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
            @Override
            public void consumeMessage(byte[] message) {
                synchronized (System.out) {
                    System.out.println("ITEM " + new String(message, StandardCharsets.UTF_8));
                    System.out.flush();
                }
                n.incrementAndGet();
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        DistributedQueue<byte[]> q = QueueBuilder.builder(client, consumer, BYTES, path)
                .lockPath(lockPath)
                .buildQueue();
        q.start();
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
