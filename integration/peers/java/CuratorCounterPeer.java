package zkrecipes.peers;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

/**
 * Curator's SharedCount and DistributedAtomicLong, driven from the command line for the
 * interop tests of zkrecipes' SharedCount and AtomicCounter. One command per run:
 *
 * <pre>
 * count-get SERVERS PATH              prints "count N VERSION"
 * count-set SERVERS PATH N            setCount(N), prints "set N"
 * count-watch SERVERS PATH N          prints "ready", then "saw N" once a listener heard N (exit 1 after 60s)
 * long-add SERVERS PATH TIMES [LOCK]  increments TIMES times, prints "ok SUCCEEDED"
 * long-get SERVERS PATH               prints "long N"
 * </pre>
 */
public final class CuratorCounterPeer {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CuratorCounterPeer count-get|count-set|count-watch|long-add|long-get SERVERS PATH [ARG] [LOCK]");
            System.exit(2);
        }
        String cmd = args[0], servers = args[1], path = args[2];
        CuratorFramework client = Peers.connect(servers);
        int code = 0;
        try {
            switch (cmd) {
                case "count-get": {
                    SharedCount c = new SharedCount(client, path, 0);
                    c.start();
                    System.out.println("count " + c.getVersionedValue().getValue() + " " + c.getVersionedValue().getVersion());
                    c.close();
                    break;
                }
                case "count-set": {
                    SharedCount c = new SharedCount(client, path, 0);
                    c.start();
                    int n = Integer.parseInt(args[3]);
                    c.setCount(n);
                    System.out.println("set " + n);
                    c.close();
                    break;
                }
                case "count-watch": {
                    final int want = Integer.parseInt(args[3]);
                    final CountDownLatch heard = new CountDownLatch(1);
                    SharedCount c = new SharedCount(client, path, 0);
                    c.addListener(new SharedCountListener() {
                        @Override
                        public void countHasChanged(SharedCountReader r, int n) {
                            if (n == want) {
                                heard.countDown();
                            }
                        }

                        @Override
                        public void stateChanged(CuratorFramework f, ConnectionState s) {}
                    });
                    c.start();
                    System.out.println("ready " + c.getCount());
                    System.out.flush();
                    if (heard.await(60, TimeUnit.SECONDS)) {
                        System.out.println("saw " + want);
                    } else {
                        System.out.println("timeout " + c.getCount());
                        code = 1;
                    }
                    c.close();
                    break;
                }
                case "long-add": {
                    int times = Integer.parseInt(args[3]);
                    DistributedAtomicLong l = args.length > 4
                            ? new DistributedAtomicLong(client, path, new RetryNTimes(2, 1),
                                    PromotedToLock.builder().lockPath(args[4]).retryPolicy(new RetryNTimes(1000, 1)).build())
                            : new DistributedAtomicLong(client, path, new RetryNTimes(1000, 1));
                    int ok = 0;
                    for (int i = 0; i < times; i++) {
                        AtomicValue<Long> v = l.increment();
                        if (v.succeeded()) {
                            ok++;
                        }
                    }
                    System.out.println("ok " + ok);
                    break;
                }
                case "long-get": {
                    DistributedAtomicLong l = new DistributedAtomicLong(client, path, new RetryNTimes(0, 1));
                    System.out.println("long " + l.get().postValue());
                    break;
                }
                default:
                    System.err.println("unknown command " + cmd);
                    code = 2;
            }
        } finally {
            client.close();
        }
        System.out.flush();
        System.exit(code);
    }
}
