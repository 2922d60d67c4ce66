package zkrecipes

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Proclaim publishes data (nil: 0 bytes) as the leader's: it replaces the data of the
// leader's node, which Leader, Participants and Subscribe report as the
// leader's Data and which a Curator LeaderLatch or LeaderSelector reports
// as the leader's participant id (Participant.getId). lease must be the
// Lease of this Election's current leadership, as Campaign or Run gave it.
// The data lasts for this term only: the next Campaign writes the
// Election's ID again.
//
// Proclaim writes only while the node, read just before, is still the
// leader's node of this session: a leader deposed meanwhile changes
// nothing. It overwrites whatever else was written into the node since
// (a revocation request, say). Proclaim fails with an error matching
// ErrNotLeader (and the lease's Err) once the lease has ended, and with
// ErrNotLeader and ErrNodeDeleted when it finds the node gone (the lease
// is then ended as lost, as it is when the node belongs to another
// session). If the reply to its write was lost before that, the write may
// have been applied during the term: the error then also matches
// ErrOutcomeUnknown and zk.ErrConnectionClosed. It fails with ErrDataTooLarge for data too
// large for a node (see WithParticipantID), ErrInvalidArgument for a nil
// ctx or lease or a lease that is not this Election's, and otherwise
// ctx's error, ErrClosed or a ZooKeeper error, after which the data may
// or may not have been set.
// While the connection is down (and the lease holds, under LoseOnLost) it
// waits for it to come back.
//
// In LatchLayout Proclaim fails with ErrInvalidArgument unless the
// Election was made WithProclaim: a Curator LeaderLatch waiting directly
// behind the leader stops watching a leader whose data changes, and would
// not take over when it goes. In SelectorLayout (Curator's LeaderSelector
// looks again on any change) Proclaim is always allowed.
func (e *Election) Proclaim(ctx context.Context, lease *Lease, data []byte) error {
	if e.err != nil {
		return e.err
	}
	if ctx == nil || lease == nil || lease.h == nil {
		return invalidArg("nil context or lease")
	}
	if e.cfg.layout == LatchLayout && !e.cfg.proclaim {
		return invalidArg("%s: Proclaim in LatchLayout needs WithProclaim(true), the promise that no Curator LeaderLatch campaigns on the path (its waiter would stop watching the leader); or use SelectorLayout", e.path)
	}
	if err := e.s.checkNodeData(e.path, data, protectedNode(e.q.dir, e.q.name)); err != nil {
		return err
	}
	h := lease.h
	// unknown is the error of a write whose reply was lost: it may have
	// been applied, so a term that ends after it must not read as "nothing
	// was written".
	var unknown error
	notLeader := func() error {
		if unknown != nil {
			return fmt.Errorf("%w: %s: %w; %w (the reply to the write of the data was lost: %w)", ErrNotLeader, e.path, lease.Err(), ErrOutcomeUnknown, unknown)
		}
		return fmt.Errorf("%w: %s: %w", ErrNotLeader, e.path, lease.Err())
	}
	for {
		if lease.Err() != nil {
			return notLeader()
		}
		if cur := e.current(); cur == nil || cur.h != h {
			return invalidArg("%s: the lease is not this election's leadership", e.path)
		}
		_, st, err := e.s.get(ctx, h.node.path)
		if err == nil && st.EphemeralOwner != h.node.gen.id {
			h.lose(lost(fmt.Errorf("%w: node %s belongs to session 0x%x", ErrSessionChanged, baseName(h.node.path), st.EphemeralOwner)), false)
			continue // reports the loss
		}
		if err == nil {
			_, err = call(ctx, e.s, "setData", h.node.path, func() (*zk.Stat, error) {
				return e.s.sendSet(h.node.path, data, st.Version)
			}, nil)
			if isRetryable(err) {
				unknown = err
			}
		}
		switch {
		case err == nil:
			return nil
		case err == zk.ErrBadVersion: // written by someone else meanwhile: read again
			continue
		case err == zk.ErrNoNode:
			cause := lost(ErrNodeDeleted)
			if g := h.node.gen; g.fired() {
				cause = g.err // the session that owned it ended
			}
			h.lose(cause, false)
			return notLeader()
		case isRetryable(err) || err == zk.ErrSessionExpired:
			// The Session may not have seen the disconnect yet: pause
			// before asking it, then look again (the lease ends first if
			// the session did).
			if err := sleepCtx(ctx, observeRetry); err != nil {
				return err
			}
			if _, _, err := e.s.awaitConnected(ctx); err != nil {
				return err
			}
		default:
			return e.s.opError("set data of", h.node.path, err)
		}
	}
}
