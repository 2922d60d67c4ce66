import java.util.Collection;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * A Curator peer for revocation interop, one action per run:
 *
 *   hold   SERVERS LOCKPATH  acquire an InterProcessMutex made revocable, print
 *                            "HELD <node>", wait up to 60 s for a revocation
 *                            request, print "REVOKED", wait 500 ms, print
 *                            "RELEASING", release, print "RELEASED"
 *   revoke SERVERS NODEPATH  Revoker.attemptRevoke on the node, print "DONE"
 */
public class RevokePeer {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: RevokePeer hold|revoke SERVERS PATH");
            System.exit(2);
        }
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(
                args[1], 10000, 5000, new ExponentialBackoffRetry(100, 3))) {
            client.start();
            client.blockUntilConnected();
            switch (args[0]) {
                case "hold":
                    hold(client, args[2]);
                    break;
                case "revoke":
                    Revoker.attemptRevoke(client, args[2]);
                    System.out.println("DONE");
                    break;
                default:
                    System.err.println("unknown action " + args[0]);
                    System.exit(2);
            }
        }
        System.out.flush();
    }

    private static void hold(CuratorFramework client, String path) throws Exception {
        InterProcessMutex lock = new InterProcessMutex(client, path);
        CountDownLatch revoked = new CountDownLatch(1);
        lock.makeRevocable(l -> revoked.countDown());
        lock.acquire();
        Collection<String> nodes = lock.getParticipantNodes();
        System.out.println("HELD " + nodes.iterator().next());
        System.out.flush();
        if (!revoked.await(60, TimeUnit.SECONDS)) {
            System.out.println("TIMEOUT");
            lock.release();
            System.exit(1);
        }
        System.out.println("REVOKED");
        Thread.sleep(500); // a waiter that took the revoke write for a release would be in by now
        System.out.println("RELEASING");
        lock.release();
        System.out.println("RELEASED");
        System.out.flush();
    }
}
