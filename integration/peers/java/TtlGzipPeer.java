package zkrecipes.peers;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.NodeCache;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.zookeeper.data.Stat;

/**
 * Curator's compression (compressed(), decompressed(), a NodeCache of compressed data) and its
 * PersistentTtlNode, for the zkrecipes interoperability tests of compression and TTL nodes.
 *
 * <p>Usage: TtlGzipPeer HOST:PORT[,...]; then one command a line on standard input, one answer a
 * line on standard output ("ERR message" on failure). Data travels as hex ("-" for 0 bytes). It
 * exits when its input ends, closing what it started.
 *
 * <ul>
 *   <li>{@code writegz PATH HEX}: create().orSetData().compressed()
 *       .creatingParentContainersIfNeeded(); answers {@code OK}.
 *   <li>{@code readgz PATH}: getData().decompressed(); answers {@code DATA HEX}.
 *   <li>{@code readraw PATH}: getData(); answers {@code DATA HEX}.
 *   <li>{@code cachegz PATH}: a NodeCache with dataIsCompressed, started with its initial read;
 *       answers {@code DATA HEX} (its current data) and closes it.
 *   <li>{@code ttlstart PATH TTLMS HEX}: starts a PersistentTtlNode and waits for its create;
 *       answers {@code OK}.
 *   <li>{@code ttlclose PATH}: closes it; answers {@code OK}.
 *   <li>{@code stat PATH}: answers {@code STAT EPHEMERALOWNER NUMCHILDREN CHILD,...} or {@code NONODE}.
 * </ul>
 */
public final class TtlGzipPeer {
    private static final Map<String, PersistentTtlNode> TTL = new HashMap<>();

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: TtlGzipPeer HOST:PORT[,...]");
            System.exit(2);
        }
        CuratorFramework client = Peers.connect(args[0]);
        Peers.serve(f -> run(client, f));
        for (PersistentTtlNode n : TTL.values()) {
            n.close();
        }
        client.close();
    }

    private static String run(CuratorFramework client, String[] f) throws Exception {
        switch (f[0]) {
            case "writegz":
                client.create().orSetData().compressed().creatingParentContainersIfNeeded().forPath(f[1], unhex(f[2]));
                return "OK";
            case "readgz":
                return "DATA " + hex(client.getData().decompressed().forPath(f[1]));
            case "readraw":
                return "DATA " + hex(client.getData().forPath(f[1]));
            case "cachegz": {
                NodeCache c = new NodeCache(client, f[1], true);
                try {
                    c.start(true);
                    ChildData d = c.getCurrentData();
                    return d == null ? "NONODE" : "DATA " + hex(d.getData());
                } finally {
                    c.close();
                }
            }
            case "ttlstart": {
                PersistentTtlNode n = new PersistentTtlNode(client, f[1], Long.parseLong(f[2]), unhex(f[3]));
                n.start();
                TTL.put(f[1], n);
                return n.waitForInitialCreate(20, TimeUnit.SECONDS) ? "OK" : "ERR not created";
            }
            case "ttlclose":
                TTL.remove(f[1]).close();
                return "OK";
            case "stat": {
                Stat st = client.checkExists().forPath(f[1]);
                if (st == null) {
                    return "NONODE";
                }
                List<String> kids = client.getChildren().forPath(f[1]);
                return "STAT " + st.getEphemeralOwner() + " " + st.getNumChildren() + " " + String.join(",", kids) + ",";
            }
            default:
                return "ERR unknown command " + f[0];
        }
    }

    private static String hex(byte[] b) {
        if (b == null || b.length == 0) {
            return "-";
        }
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xff));
        }
        return s.toString();
    }

    private static byte[] unhex(String s) {
        if (s.equals("-")) {
            return new byte[0];
        }
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }
}
