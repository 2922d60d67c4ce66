package zkrecipes.peers;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * What the peers share: a Curator client on the servers they are given, their command loop, and
 * the queue peers' byte serializer and whole-line println.
 */
public final class Peers {
    private Peers() {}

    /** A command of a peer's: the line's words in, the answer line out. */
    public interface Command {
        String run(String[] words) throws Exception;
    }

    /**
     * Prints "READY", then answers each line of standard input with cmd's answer (or "ERR " and
     * the exception) on one line, until standard input closes.
     */
    public static void serve(Command cmd) throws IOException {
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = cmd.run(line.trim().split(" "));
            } catch (Exception e) {
                answer = "ERR " + e;
            }
            System.out.println(answer.replace('\n', ' '));
            System.out.flush();
        }
    }

    /** The queue peers' serializer: an item is its bytes, as given. */
    public static final QueueSerializer<byte[]> BYTES = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) {
            return item;
        }

        @Override
        public byte[] deserialize(byte[] bytes) {
            return bytes;
        }
    };

    /** Prints line and flushes it, whole, beside other threads' lines (a queue's consumer threads). */
    public static void println(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    /**
     * Returns a started client of servers (HOST:PORT[,...]) with 10 s sessions, once it is
     * connected; exits with status 1 when it is not within 30 s.
     */
    public static CuratorFramework connect(String servers) throws InterruptedException {
        return connect(servers, 10000, 5);
    }

    /** connect with sessions of sessionTimeoutMs and up to maxRetries retries of an operation. */
    public static CuratorFramework connect(String servers, int sessionTimeoutMs, int maxRetries)
            throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(servers)
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(50, maxRetries))
                .build();
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("could not connect to " + servers);
            System.exit(1);
        }
        return c;
    }
}
