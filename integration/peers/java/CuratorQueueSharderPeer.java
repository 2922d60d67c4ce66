package zkrecipes.peers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueAllocator;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSharder;
import org.apache.curator.framework.recipes.queue.QueueSharderPolicies;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.utils.ZKPaths;

/**
 * A Curator 5.4 QueueSharder peer for the zkrecipes QueueSharder interoperability tests. Its
 * allocator builds a DistributedQueue per shard; a consumer's locks its items under
 * LOCKS/&lt;shard name&gt;, as a zkrecipes QueueSharder's default does.
 *
 * <pre>
 * CuratorQueueSharderPeer produce SERVERS QUEUES LEADER THRESHOLD CHECK_MS MAX_QUEUES
 *     starts a sharder without consumer, prints "READY", then runs the commands of its
 *     standard input, one a line, until its end:
 *       put N PREFIX   getQueue().put(PREFIX-i) for i in 0..N-1, then "PUT N"
 *       wait K         waits (up to 60 s) until getShardQty() &gt;= K, then "SHARDS n"
 * CuratorQueueSharderPeer consume SERVERS QUEUES LEADER LOCKS THRESHOLD CHECK_MS MAX_QUEUES
 *     starts a sharder whose shards each have a consumer, prints "READY", then "ITEM text"
 *     for every item consumed, until its standard input ends
 * </pre>
 *
 * <p>Items are UTF-8 text. The last line is "DONE n" (items put, or consumed).
 */
public final class CuratorQueueSharderPeer {
    private CuratorQueueSharderPeer() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 7) {
            System.err.println("usage: CuratorQueueSharderPeer <produce|consume> SERVERS QUEUES LEADER [LOCKS] THRESHOLD CHECK_MS MAX_QUEUES");
            System.exit(2);
        }
        CuratorFramework client = Peers.connect(args[1]);
        try {
            switch (args[0]) {
                case "produce":
                    produce(client, args[2], args[3], policies(args, 4));
                    break;
                case "consume":
                    consume(client, args[2], args[3], args[4], policies(args, 5));
                    break;
                default:
                    System.err.println("unknown mode " + args[0]);
                    System.exit(2);
            }
        } finally {
            client.close();
        }
    }

    private static QueueSharderPolicies policies(String[] args, int from) {
        return QueueSharderPolicies.builder()
                .newQueueThreshold(Integer.parseInt(args[from]))
                .thresholdCheckMs(Integer.parseInt(args[from + 1]))
                .maxQueues(Integer.parseInt(args[from + 2]))
                .build();
    }

    private static void produce(CuratorFramework client, String queues, String leader, QueueSharderPolicies policies)
            throws Exception {
        QueueAllocator<byte[], DistributedQueue<byte[]>> allocator = (c, path) ->
                QueueBuilder.builder(c, null, Peers.BYTES, path).putInBackground(false).buildQueue();
        QueueSharder<byte[], DistributedQueue<byte[]>> sharder =
                new QueueSharder<>(client, allocator, queues, leader, policies);
        sharder.start();
        AtomicInteger put = new AtomicInteger();
        Peers.serve(cmd -> {
            switch (cmd[0]) {
                case "put":
                    int n = Integer.parseInt(cmd[1]);
                    for (int i = 0; i < n; i++) {
                        sharder.getQueue().put((cmd[2] + "-" + i).getBytes(StandardCharsets.UTF_8));
                    }
                    put.addAndGet(n);
                    return "PUT " + n;
                case "wait":
                    int k = Integer.parseInt(cmd[1]);
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (sharder.getShardQty() < k && System.nanoTime() < deadline) {
                        Thread.sleep(10);
                    }
                    return "SHARDS " + sharder.getShardQty();
                default:
                    return "ERROR unknown command " + String.join(" ", cmd);
            }
        });
        sharder.close();
        Peers.println("DONE " + put.get());
    }

    private static void consume(CuratorFramework client, String queues, String leader, String locks,
            QueueSharderPolicies policies) throws Exception {
        AtomicInteger n = new AtomicInteger();
        QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
            @Override
            public void consumeMessage(byte[] message) {
                Peers.println("ITEM " + new String(message, StandardCharsets.UTF_8));
                n.incrementAndGet();
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        QueueAllocator<byte[], DistributedQueue<byte[]>> allocator = (c, path) ->
                QueueBuilder.builder(c, consumer, Peers.BYTES, path)
                        .lockPath(ZKPaths.makePath(locks, ZKPaths.getNodeFromPath(path)))
                        .buildQueue();
        QueueSharder<byte[], DistributedQueue<byte[]>> sharder =
                new QueueSharder<>(client, allocator, queues, leader, policies);
        sharder.start();
        Peers.println("READY");
        try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            while (r.readLine() != null) {
                // only the end matters
            }
        }
        sharder.close();
        Peers.println("DONE " + n.get());
    }
}
