package zkrecipes.peers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.nodes.GroupMember;

/**
 * Curator's view of a semaphore's participants, of an election's leader and of a group, for the
 * zkrecipes interoperability tests of Semaphore.Participants/Available, Election.Proclaim and
 * GroupMember.
 *
 * <p>Usage: ExtrasPeer HOST:PORT[,...]; then one command a line on standard input, one answer a
 * line on standard output ("ERR message" on failure). It exits when its input ends.
 *
 * <ul>
 *   <li>{@code acquire PATH MAX N DATA}: takes N leases of an InterProcessSemaphoreV2 whose lease
 *       nodes hold DATA, and keeps them; answers {@code OK NODE...}.
 *   <li>{@code returnall}: returns every lease taken; answers {@code OK}.
 *   <li>{@code nodes PATH MAX}: getParticipantNodes, sorted; answers {@code NODES NODE,...}.
 *   <li>{@code latchleader PATH}: LeaderLatch.getLeader; answers {@code LEADER isLeader id}.
 *   <li>{@code selectorleader PATH}: LeaderSelector.getLeader, same answer.
 *   <li>{@code join PATH ID DATA}: starts a GroupMember ID holding DATA; answers {@code OK}.
 *   <li>{@code members PATH}: that member's getCurrentMembers, by id; answers
 *       {@code MEMBERS ID=DATA...}.
 *   <li>{@code leave PATH}: closes that member; answers {@code OK}.
 * </ul>
 */
public final class ExtrasPeer {
    /** The groups joined with "join", by membership path. */
    private static final Map<String, GroupMember> GROUPS = new HashMap<>();

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ExtrasPeer HOST:PORT[,...]");
            System.exit(2);
        }
        CuratorFramework client = Peers.connect(args[0]);
        List<Lease> leases = new ArrayList<>();
        Peers.serve(f -> run(client, leases, f));
        for (Lease l : leases) {
            l.close();
        }
        for (GroupMember g : GROUPS.values()) {
            g.close();
        }
        client.close();
    }

    private static String run(CuratorFramework client, List<Lease> leases, String[] f) throws Exception {
        switch (f[0]) {
            case "acquire": {
                InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, f[1], Integer.parseInt(f[2]));
                sem.setNodeData(f[4].getBytes(StandardCharsets.UTF_8));
                java.util.Collection<Lease> got = sem.acquire(Integer.parseInt(f[3]), 20, TimeUnit.SECONDS);
                if (got == null) {
                    return "ERR timed out";
                }
                StringBuilder b = new StringBuilder("OK");
                for (Lease l : got) {
                    leases.add(l);
                    b.append(' ').append(l.getNodeName());
                }
                return b.toString();
            }
            case "returnall":
                for (Lease l : leases) {
                    l.close();
                }
                leases.clear();
                return "OK";
            case "nodes": {
                InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, f[1], Integer.parseInt(f[2]));
                List<String> nodes = new ArrayList<>(sem.getParticipantNodes());
                Collections.sort(nodes);
                return "NODES " + String.join(",", nodes);
            }
            case "join": {
                GroupMember g = new GroupMember(client, f[1], f[2], f[3].getBytes(StandardCharsets.UTF_8));
                g.start();
                GROUPS.put(f[1], g);
                return "OK";
            }
            case "members": {
                Map<String, String> sorted = new TreeMap<>();
                for (Map.Entry<String, byte[]> e : GROUPS.get(f[1]).getCurrentMembers().entrySet()) {
                    sorted.put(e.getKey(), new String(e.getValue(), StandardCharsets.UTF_8));
                }
                StringBuilder b = new StringBuilder("MEMBERS");
                for (Map.Entry<String, String> e : sorted.entrySet()) {
                    b.append(' ').append(e.getKey()).append('=').append(e.getValue());
                }
                return b.toString();
            }
            case "leave":
                GROUPS.remove(f[1]).close();
                return "OK";
            case "latchleader": {
                Participant p = new LeaderLatch(client, f[1]).getLeader();
                return "LEADER " + p.isLeader() + " " + p.getId();
            }
            case "selectorleader": {
                LeaderSelector sel = new LeaderSelector(client, f[1], new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework c) {}
                });
                Participant p = sel.getLeader();
                return "LEADER " + p.isLeader() + " " + p.getId();
            }
            default:
                return "ERR unknown command " + f[0];
        }
    }
}
