// Package zkrecipes provides distributed coordination recipes on Apache
// ZooKeeper — a reentrant mutex, and on the same queue a read-write lock, a
// semaphore, a multi-lock and leader election — wire-compatible with Apache
// Curator, so that Go and Java services can share a lock.
//
// # Guarantees
//
// A Session owns one connection to the ensemble. Every acquisition returns
// a *Lease. While no fault occurs, at most one Lease of a Mutex path is held
// at a time, waiters are served in FIFO order, a release wakes exactly one
// waiter, and no acquisition that fails, is cancelled or times out leaves a
// node behind.
//
// # The failure model
//
// Ownership can be lost at any moment, and a distributed lock cannot
// prevent two processes from believing they hold it at once: a holder may
// pause (GC, swap, a stopped VM) past its session timeout while the server
// hands the lock to someone else. What this package does is tell the holder
// as early as it can: a Lease's Done channel closes, and Err says why, when
// the connection is lost (StateSuspended, under the default LoseOnSuspended
// policy), when the session expires or is replaced, or when the lock node is
// deleted by someone else. A holder must watch Done and stop, and must guard
// every write to the resource it protects with the Lease's fencing token
// (Token, a zxid: normally the node's creation zxid; it increases strictly
// from one owner to the next across the whole ensemble, and Lease.Token
// says what holds for an RWMutex's read leases) or make the write
// conditional on the lock node with Check in a ZooKeeper Multi.
//
// After a session expires the Session connects again under a new session
// (reporting LOST, then RECONNECTED): acquisitions that were waiting start
// over under the Session's RetryPolicy; leases granted under the old
// session stay ended.
//
// See the examples in this package and the programs under examples/.
package zkrecipes
