package zkrecipes.peers;

import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/** What the peers share: a Curator client on the servers they are given. */
public final class Peers {
    private Peers() {}

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
