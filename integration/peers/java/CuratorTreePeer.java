package zkrecipes.peers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * A Curator client that writes a tree at random, for the interop test of zkrecipes'
 * TreeCache:
 *
 * <pre>
 * write SERVERS PATH SEED OPS   OPS creates (with parent containers), updates and
 *                               recursive deletes under PATH, three levels deep;
 *                               prints "done OPS"
 * </pre>
 */
public final class CuratorTreePeer {
    public static void main(String[] args) throws Exception {
        if (args.length != 5 || !args[0].equals("write")) {
            System.err.println("usage: CuratorTreePeer write SERVERS PATH SEED OPS");
            System.exit(2);
        }
        String servers = args[1], root = args[2];
        Random r = new Random(Long.parseLong(args[3]));
        int ops = Integer.parseInt(args[4]);
        CuratorFramework client = Peers.connect(servers);
        List<String> paths = new ArrayList<>();
        paths.add(root);
        for (String a : new String[] {"a", "b", "c"}) {
            paths.add(root + "/" + a);
            for (String b : new String[] {"x", "y", "z"}) {
                paths.add(root + "/" + a + "/" + b);
            }
        }
        for (int i = 0; i < ops; i++) {
            String p = paths.get(r.nextInt(paths.size()));
            byte[] data = ("curator-" + i).getBytes(StandardCharsets.UTF_8);
            try {
                Stat st = client.checkExists().forPath(p);
                if (st == null) {
                    client.create().creatingParentContainersIfNeeded().forPath(p, data);
                } else if (r.nextInt(4) == 0 && !p.equals(root)) {
                    client.delete().deletingChildrenIfNeeded().forPath(p);
                } else {
                    client.setData().forPath(p, data);
                }
            } catch (KeeperException.NodeExistsException | KeeperException.NoNodeException e) {
                // a container the server reaped meanwhile: the next operation goes on
            }
        }
        System.out.println("done " + ops);
        client.close();
    }
}
