package zkrecipes.peers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * A Curator barrier peer for the zkrecipes interoperability tests.
 *
 * <p>Usage: CuratorBarrierPeer set|remove|wait SERVERS PATH, or CuratorBarrierPeer double SERVERS
 * PATH N. It prints one word per step on stdout: SET, REMOVED; WAITING then RELEASED (or TIMEOUT);
 * for double, ENTERING then ENTERED (or TIMEOUT), then after a line on stdin LEFT (or TIMEOUT).
 * Every wait gives up after 60 seconds. Exit code 0 on success, 1 on an error or a timeout, 2 on a
 * usage error.
 */
public final class CuratorBarrierPeer {
    private static final long WAIT_SECONDS = 60;

    private CuratorBarrierPeer() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3 || (args[0].equals("double") && args.length < 4)) {
            System.err.println("usage: CuratorBarrierPeer set|remove|wait SERVERS PATH | double SERVERS PATH N");
            System.exit(2);
        }
        CuratorFramework client =
                CuratorFrameworkFactory.newClient(args[1], 10000, 5000, new ExponentialBackoffRetry(50, 10));
        client.start();
        int code = 0;
        try {
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected to " + args[1]);
            }
            code = run(client, args) ? 0 : 1;
        } catch (Exception e) {
            System.err.println("error: " + e);
            code = 1;
        } finally {
            client.close();
        }
        System.exit(code);
    }

    private static boolean run(CuratorFramework client, String[] args) throws Exception {
        String path = args[2];
        switch (args[0]) {
            case "set":
                new DistributedBarrier(client, path).setBarrier();
                say("SET");
                return true;
            case "remove":
                new DistributedBarrier(client, path).removeBarrier();
                say("REMOVED");
                return true;
            case "wait": {
                DistributedBarrier b = new DistributedBarrier(client, path);
                say("WAITING");
                boolean ok = b.waitOnBarrier(WAIT_SECONDS, TimeUnit.SECONDS);
                say(ok ? "RELEASED" : "TIMEOUT");
                return ok;
            }
            case "double": {
                DistributedDoubleBarrier b = new DistributedDoubleBarrier(client, path, Integer.parseInt(args[3]));
                say("ENTERING");
                if (!b.enter(WAIT_SECONDS, TimeUnit.SECONDS)) {
                    say("TIMEOUT");
                    return false;
                }
                say("ENTERED");
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                in.readLine();
                boolean ok = b.leave(WAIT_SECONDS, TimeUnit.SECONDS);
                say(ok ? "LEFT" : "TIMEOUT");
                return ok;
            }
            default:
                System.err.println("unknown command " + args[0]);
                System.exit(2);
                return false;
        }
    }

    private static void say(String word) {
        System.out.println(word);
        System.out.flush();
    }
}
