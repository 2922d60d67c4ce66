package zkrecipes

// What a semaphore shows to anyone who looks: its lease holders and the
// permits left (CURATOR-230).

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// Sort markers of a semaphore's lease nodes.
var leaseMarkers = []string{semLeaseName}

// Participants lists the semaphore's lease nodes, oldest first: the nodes
// Curator's InterProcessSemaphoreV2.getParticipantNodes names, Go's and
// Curator's alike, each with its data (WithNodeData; by default the
// creator's address), owning session and token. The oldest maximum of them
// are marked Holder. Any others belong to the one acquisition in progress
// (it holds the semaphore's mutex and waits for leases to be returned), or,
// after a shared count was lowered, are held beyond the new maximum: the
// listing cannot tell these apart. It may be called by any process, holding
// leases or not, and fails with ctx's error, ErrClosed, ErrBadCount or a
// ZooKeeper error; a path that does not exist yet has no participants.
func (sem *Semaphore) Participants(ctx context.Context) ([]Participant, error) {
	limit, err := sem.currentMax(ctx)
	if err != nil {
		return nil, err
	}
	return sem.s.participants(ctx, sem.leases.dir, leaseMarkers, firstHolds(limit))
}

// Available returns the number of leases that could be acquired now: the
// maximum (read from the shared count node with WithSharedCount, without
// creating it) less the lease nodes on the server, never below zero. Lease
// nodes of an acquisition still waiting count as taken. The answer may be
// stale by the time it arrives: only Acquire or TryAcquire takes a lease.
// It fails with ctx's error, ErrClosed, ErrBadCount or a ZooKeeper error.
func (sem *Semaphore) Available(ctx context.Context) (int, error) {
	limit, err := sem.currentMax(ctx)
	if err != nil {
		return 0, err
	}
	kids, err := sem.s.children(ctx, sem.leases.dir)
	if err == zk.ErrNoNode {
		kids, err = nil, nil
	}
	if err != nil {
		return 0, sem.s.opError("list", sem.leases.dir, err)
	}
	return max(0, limit-len(kids)), nil
}

// currentMax reads the semaphore's maximum once, with no watch: the fixed
// maximum, or the shared count (its seed while the node does not exist).
func (sem *Semaphore) currentMax(ctx context.Context) (int, error) {
	if sem.err != nil {
		return 0, sem.err
	}
	if ctx == nil {
		return 0, invalidArg("nil context")
	}
	if sem.count == nil {
		return sem.max, nil
	}
	data, _, err := sem.s.get(ctx, sem.count.path)
	switch {
	case err == zk.ErrNoNode:
		return int(sem.count.seed), nil
	case err != nil:
		return 0, sem.s.opError("read", sem.count.path, err)
	}
	n, err := decodeCount(sem.cfg.countPath, data)
	return int(n), err
}
