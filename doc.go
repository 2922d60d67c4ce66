// Package zkrecipes provides distributed coordination recipes on Apache
// ZooKeeper (a reentrant mutex and, on the same queue, a read-write lock, a
// semaphore, a multi-lock and leader election), wire-compatible with Apache
// Curator so that Go and Java services can share a lock.
//
// A Session owns one connection to the ensemble; every acquisition returns a
// *Lease. While nothing fails, at most one Lease of a Mutex path is held at a
// time, waiters are served in FIFO order, a release wakes one waiter, and an
// acquisition that fails, is cancelled or times out leaves no node behind.
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
// with Check in a ZooKeeper Multi. After an expiry the Session connects
// again under a new session: waiting acquisitions start over under its
// RetryPolicy; leases of the old session stay ended.
//
// docs/reliability.md states what holds under which faults, docs/design.md
// how the recipes work, docs/compatibility.md what interoperates with
// Curator and kazoo. See the examples in this package and under examples/.
package zkrecipes
