// Package bench holds the lock workloads of the zkrecipes benchmarks and
// runs them in-process on zkrecipes' Mutex and on go-zookeeper's own
// zk.Lock, against a real ZooKeeper server:
//
//   - Uncontended: one session acquires and releases in a loop; the p50 and
//     p99 of one cycle, and the requests per cycle the server counted.
//   - Contended: several sessions, each its own goroutine, contend for one
//     path; acquisitions per second, the handoff time (from the releaser's
//     EXIT line to the successor's ENTER line in a shared log, checked for
//     exclusion by peers.CheckLog), and violations. With Load.Hold, each
//     holder stays inside for that long: the exclusion check, whose
//     sections are long enough for two holders at once to overlap in the
//     log (the throughput run's, two log writes, rarely do).
//   - Drain: n waiters, each its own session, queue behind one holder; the
//     holder lets go and each waiter releases as soon as it holds; the time
//     and the server's response bytes per handoff.
//   - Floor: raw go-zookeeper requests with no lock around them: the
//     create / getChildren / delete cycle and a chain of delete→notification
//     handoffs, the best any ZooKeeper lock can do on that server; and
//     RawLock, the contended workload on raw requests, the fewest any
//     queueing lock can make, with the next acquisitions running beside
//     each handoff as they do for a lock.
//   - MarkedChain: the floor's marked chain alone, with as many links as a
//     drain has waiters (the drain curve's floor), reported as a drain.
//   - SessionMemory: the live heap and goroutines that n idle zkrecipes
//     Sessions, or n bare go-zookeeper connections, add to this process.
//   - HeldLeases: n leases held on one session through a loopback proxy
//     (zkrecipes' Mutex, or go-zookeeper's zk.Lock): the acquisition time,
//     the heap, goroutines and server watches per lease, and the time to
//     be whole again after the proxy resets the connection and after the
//     server restarts, with the leases lost (the lease curve).
//   - WorkQueue: items put beforehand (FillWorkQueue) are consumed by 1 or
//     more consumers, each its own session, each item taken under its lock
//     and acked (WorkQueueConsume, zkrecipes' WorkQueue; zkbench runs
//     Curator's DistributedQueue with a lock path beside it): items per
//     second and the server's requests per item.
//
// The server counters come from the "mntr" four-letter word, read between
// phases while nothing else talks to the server: zk_packets_received counts
// every packet the server read from a client (requests, pings, and the mntr
// command itself), and zk_response_bytes the bytes of the replies to requests
// (it counts neither watch notifications nor pings).
//
// The Go benchmarks (go test -bench) live in bench_test.go; the comparative
// runner with Curator and kazoo is the program integration/cmd/zkbench,
// which `make bench` runs.
package bench
