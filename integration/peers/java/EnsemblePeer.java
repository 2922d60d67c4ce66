import java.io.BufferedReader;
import zkrecipes.peers.Peers;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;

/**
 * A Curator client left to follow its ensemble (Curator's EnsembleTracker, on by default), for
 * the zkrecipes reconfiguration interop test.
 *
 * <p>Usage: EnsemblePeer SERVERS. Once connected it prints "READY", then a line
 * "STATE <connection string> <session id in hex>" at start and whenever either changes, polling
 * every 50 ms and reading something each time (Curator applies a new connection string when the
 * client is used). It exits when its standard input ends, or after 5 minutes.
 */
public class EnsemblePeer {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: EnsemblePeer SERVERS");
            System.exit(2);
        }
        // Curator's defaults otherwise: its EnsembleTracker follows /zookeeper/config.
        CuratorFramework client = Peers.connect(args[0], 15000, 10);
        System.out.println("READY");
        System.out.flush();
        Thread stdin = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                while (in.readLine() != null) {
                    // only its end matters
                }
            } catch (Exception e) {
                // end as well
            }
            System.exit(0);
        });
        stdin.setDaemon(true);
        stdin.start();
        String last = "";
        long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (System.nanoTime() < end) {
            try {
                client.checkExists().forPath("/");
            } catch (Exception e) {
                // cut off for now: the state line says where it is
            }
            String now = client.getZookeeperClient().getCurrentConnectionString() + " "
                    + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
            if (!now.equals(last)) {
                System.out.println("STATE " + now);
                System.out.flush();
                last = now;
            }
            Thread.sleep(50);
        }
        client.close();
    }
}
