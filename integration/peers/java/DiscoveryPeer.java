package zkrecipes.peers;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;

/**
 * Curator's curator-x-discovery 5.4 side of the zkrecipes discovery interoperability tests:
 * a ServiceDiscovery with Map payloads and the default JsonInstanceSerializer.
 *
 * <p>Usage: DiscoveryPeer HOST:PORT[,...] BASEPATH; then one command a line on standard input,
 * one answer a line on standard output ("ERR message" on failure). It exits when its input ends.
 *
 * <ul>
 *   <li>{@code register NAME ID ADDRESS PORT KEY=VALUE}: registers an instance (uriSpec
 *       "{scheme}://{address}:{port}/x", payload a map of KEY to VALUE); answers {@code OK}.
 *   <li>{@code unregister NAME ID}: unregisters it; answers {@code OK}.
 *   <li>{@code query NAME}: queryForInstances; answers {@code INSTANCES [json,...]}, each
 *       instance as {name,id,address,port,sslPort,payload,serviceType,uri,enabled}.
 *   <li>{@code cache NAME N}: a ServiceCache, waited on until it holds N instances (20 s at
 *       most); answers {@code CACHE id,...} (sorted) with what it holds then.
 *   <li>{@code provider NAME}: a ServiceProvider's getInstance; answers {@code PROVIDER id}.
 *   <li>{@code follow NAME}: starts a ServiceCache of NAME kept until exit, whose listener
 *       notes the wall-clock time of every change; answers {@code OK}.
 *   <li>{@code await NAME N}: waits (20 s at most) until the followed cache has held N
 *       instances; answers {@code AT <unix ns>} of the first change that made it so.
 * </ul>
 */
public final class DiscoveryPeer {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, ServiceCache<Map>> FOLLOWED = new HashMap<>();
    /** Per followed service: [instances, unix ns] of every change, in order. */
    private static final Map<String, List<long[]>> CHANGES = new HashMap<>();

    private static long unixNanos() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: DiscoveryPeer HOST:PORT[,...] BASEPATH");
            System.exit(2);
        }
        CuratorFramework client = Peers.connect(args[0]);
        ServiceDiscovery<Map> sd = ServiceDiscoveryBuilder.builder(Map.class)
                .client(client)
                .basePath(args[1])
                .serializer(new JsonInstanceSerializer<>(Map.class))
                .build();
        sd.start();
        Map<String, ServiceInstance<Map>> mine = new HashMap<>();
        Peers.serve(f -> handle(sd, mine, f));
        for (ServiceCache<Map> c : FOLLOWED.values()) {
            c.close();
        }
        sd.close();
        client.close();
    }

    private static String handle(ServiceDiscovery<Map> sd, Map<String, ServiceInstance<Map>> mine, String[] f)
            throws Exception {
        switch (f[0]) {
            case "register": {
                Map<String, String> payload = new LinkedHashMap<>();
                String[] kv = f[5].split("=", 2);
                payload.put(kv[0], kv[1]);
                ServiceInstance<Map> si = ServiceInstance.<Map>builder()
                        .name(f[1]).id(f[2]).address(f[3]).port(Integer.parseInt(f[4]))
                        .payload(payload).uriSpec(new UriSpec("{scheme}://{address}:{port}/x")).build();
                sd.registerService(si);
                mine.put(f[1] + "/" + f[2], si);
                return "OK";
            }
            case "unregister":
                sd.unregisterService(mine.remove(f[1] + "/" + f[2]));
                return "OK";
            case "query": {
                List<Map<String, Object>> out = new ArrayList<>();
                for (ServiceInstance<Map> si : sd.queryForInstances(f[1])) {
                    out.add(describe(si));
                }
                return "INSTANCES " + JSON.writeValueAsString(out);
            }
            case "cache": {
                int n = Integer.parseInt(f[2]);
                ServiceCache<Map> cache = sd.serviceCacheBuilder().name(f[1]).build();
                cache.start();
                try {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (cache.getInstances().size() != n && System.nanoTime() < deadline) {
                        Thread.sleep(10);
                    }
                    List<String> ids = new ArrayList<>();
                    for (ServiceInstance<Map> si : cache.getInstances()) {
                        ids.add(si.getId());
                    }
                    java.util.Collections.sort(ids);
                    return "CACHE " + String.join(",", ids);
                } finally {
                    cache.close();
                }
            }
            case "provider": {
                ServiceProvider<Map> p = sd.serviceProviderBuilder().serviceName(f[1]).build();
                p.start();
                try {
                    ServiceInstance<Map> si = p.getInstance();
                    return "PROVIDER " + (si == null ? "-" : si.getId());
                } finally {
                    p.close();
                }
            }
            case "follow": {
                ServiceCache<Map> cache = sd.serviceCacheBuilder().name(f[1]).build();
                List<long[]> changes = java.util.Collections.synchronizedList(new ArrayList<>());
                cache.addListener(new org.apache.curator.x.discovery.details.ServiceCacheListener() {
                    @Override
                    public void cacheChanged() {
                        changes.add(new long[] {cache.getInstances().size(), unixNanos()});
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, org.apache.curator.framework.state.ConnectionState s) {}
                });
                cache.start();
                FOLLOWED.put(f[1], cache);
                CHANGES.put(f[1], changes);
                return "OK";
            }
            case "await": {
                int n = Integer.parseInt(f[2]);
                List<long[]> changes = CHANGES.get(f[1]);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (System.nanoTime() < deadline) {
                    synchronized (changes) {
                        for (long[] c : changes) {
                            if (c[0] == n) {
                                changes.clear();
                                return "AT " + c[1];
                            }
                        }
                    }
                    Thread.sleep(1);
                }
                return "ERR timeout";
            }
            default:
                return "ERR unknown command " + f[0];
        }
    }

    private static Map<String, Object> describe(ServiceInstance<Map> si) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", si.getName());
        m.put("id", si.getId());
        m.put("address", si.getAddress());
        m.put("port", si.getPort());
        m.put("sslPort", si.getSslPort());
        m.put("payload", si.getPayload());
        m.put("payloadClass", si.getPayload() == null ? null : si.getPayload().getClass().getName());
        m.put("registrationTimeUTC", si.getRegistrationTimeUTC());
        m.put("serviceType", si.getServiceType().name());
        m.put("uri", si.getUriSpec() == null ? null : si.buildUriSpec());
        m.put("enabled", si.isEnabled());
        return m;
    }
}
