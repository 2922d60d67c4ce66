// Package robustness checks zkrecipes the way etcd's tests/robustness
// checks etcd: client processes drive traffic at the recipes of a
// 3-server ensemble while the test injects faults from a printed seed, every
// operation is recorded with its invocation and response times on the
// machine's one monotonic clock, and each recipe's history is then checked
// against a sequential model with porcupine's linearizability checker
// (github.com/anishathalye/porcupine, a P-compositional search after Wing
// and Gong, with Lowe's memoization).
//
// Models and checks (see the files named after them):
//   - lock (Mutex, SemaphoreMutex, RWMutex write side), as seen by a fenced
//     resource: grants in token order, one holder at a time, each holding
//     ending by a release or by a loss its holder was told of, and a write
//     accepted only if no newer token wrote; beside it the chaos suite's
//     overlap check (every overlap of two holders preceded by the old
//     holder's loss signal);
//   - counter (AtomicCounter): a linearizable 64-bit register with
//     add, get and compare-and-set;
//   - semaphore (Semaphore): never more than its maximum of leases held;
//   - versioned count (SharedCount): a 32-bit count with its version,
//     get and versioned set;
//   - queue (Queue), checked directly: no item taken twice, none lost, none
//     never offered;
//   - work queue (WorkQueue), item by item: a take granted only for an item
//     put and not acked, while no earlier take holds it, in token order; an
//     ack or release succeeding only for the item's latest take, the ack
//     once; beside it, checked directly: every item put is consumed (acked,
//     or drained by the test after the run), an item is taken while an
//     earlier consumer holds it only after that consumer was told of its
//     loss (the lock's overlap check, item by item), no lock node of a
//     closed session is left, and none at all once the killed clients'
//     sessions expired;
//   - watch (WatchData, NodeCache and TreeCache on the SharedCount's node,
//     WatchChildren on the Queue's), checked directly: each observer's
//     states in order and each one written (a listing: its names as many as
//     its Stat's children, the same as every other observer's at that
//     Pzxid), the last one the node's final state.
//
// An operation whose outcome is unknown (the reply was lost, the client was
// killed) may or may not have happened; see CounterOperations for how far
// after its invocation the checker may place it. Reads are ZooKeeper's:
// sequentially consistent, not linearizable (see CounterOperations).
//
// The fault run is skipped unless -robustness.duration is set:
//
//	cd integration && go test -race -count=1 ./robustness/ -run Robustness -robustness.duration=20s
//	go test ./robustness/ -run Robustness -robustness.duration=10m -robustness.seed=42
package robustness
