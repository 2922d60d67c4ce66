// Package zkrecipes provides distributed coordination recipes on Apache
// ZooKeeper, wire-compatible with Apache Curator so that Go and Java
// services can share a lock, a cache or a registry.
//
// # Which recipe when
//
//   - One process at a time in a critical section: Mutex (reentrant per
//     Mutex value and goroutine), or SemaphoreMutex when it must not be
//     reentrant.
//   - Many readers or one writer: RWMutex.
//   - At most N at a time: Semaphore (N fixed, or read from a SharedCount).
//   - Several locks, all or none: MultiLock.
//   - One leader among replicas: Election. Run for a singleton worker that
//     works while it leads; Campaign to hold the leadership yourself;
//     Subscribe to follow who leads without standing; Proclaim to publish
//     the leader's data.
//   - A write to ZooKeeper that must only land while a lock is held:
//     Lease.Check in Session.Multi; a write elsewhere: pass Lease.Token to
//     the store and let it refuse lower tokens.
//   - A hold that ends after a set time, or that others may ask back:
//     WithLeaseTime; WithRevocable and Revoke.
//   - A number or a small value shared by processes, changed without lost
//     updates: SharedCount, SharedValue, AtomicCounter.
//   - Wait until someone lets everyone go: Barrier; start and finish
//     together: DoubleBarrier.
//   - Hand small work items from process to process, each taken once: Queue.
//   - A local copy of a node or a subtree, with its changes as events:
//     NodeCache, TreeCache; a function called on each change: WatchData,
//     WatchChildren; every event of a subtree: PersistentWatch.
//   - A node that stays while the process lives: PersistentNode (with a
//     TTL: PersistentTtlNode); a group's members: GroupMember; registering
//     and finding services: the discovery package.
//   - Nodes of your own, read and written as Curator's framework does:
//     Session.Create, Get, Set, Delete, Multi (below).
//   - Metrics and traces: WithObserver (the otelzk module adapts it to
//     OpenTelemetry).
//
// A Session owns one connection to the ensemble and serves every recipe of
// a process; every acquisition returns a *Lease. While nothing fails, at
// most one Lease of a Mutex path is held at a time, waiters are served in
// FIFO order, a release wakes one waiter, and an acquisition that fails, is
// cancelled or times out leaves no node behind.
//
// # The failure model
//
// Ownership can be lost at any moment, and no distributed lock can stop a
// paused holder (GC, a stopped VM) from acting after its session expired.
// This package tells the holder as early as it can: a Lease's Done closes,
// its Context ends and Err says why when the connection is lost (under the
// default LoseOnSuspended policy), the session expires or is replaced, or
// the node is deleted by someone else, or its lease time (WithLeaseTime)
// runs out. A holder must stop then, and guard
// every write to the resource it protects with the Lease's fencing Token or
// with Check in the Session's Multi. After an expiry the Session connects
// again under a new session: waiting acquisitions start over under its
// RetryPolicy; leases of the old session stay ended.
//
// # Nodes of your own
//
// Beside the recipes, the Session reads and writes nodes as Curator's
// framework does: Create (protected, with container parents), Get,
// Exists, Children, Set, Delete (guaranteed, recursive), transactions
// (Multi), all under the namespace and retried where that is safe; see
// docs/nodes.md.
//
// docs/README.md says which page answers which question:
// docs/reliability.md states what holds under which faults, docs/design.md
// how the recipes work, docs/compatibility.md what interoperates with
// Curator and kazoo. Every recipe family has an example in this package;
// those that need a ZooKeeper server (ZK_SERVERS) are compiled by go test,
// not run. Whole programs are under examples/.
package zkrecipes
