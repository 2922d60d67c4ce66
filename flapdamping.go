package zkrecipes

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// WithFlapDamping damps connection flaps, in the spirit of Curator's
// CircuitBreakingConnectionStateListener: a connection that drops and
// comes back again and again makes the Session's recipes that act again
// on their own after a loss wait for it to settle, rather than act at
// each reconnection. Those are Election.Campaign (and so Election.Run,
// which campaigns again with WithRequeue), and the keepers:
// PersistentNode, GroupMember and a discovery registration, which check
// their node and create it again.
//
// Damping begins at a suspension (or a loss of the session) while the
// connection was up and no damping was under way. It ends once the
// connection is up at the end of a wait of policy (each wait the next
// NextBackOff of a BackOff made at the suspension) and has not been
// suspended during that wait; or when the policy gives up (Stop),
// whatever the connection's state: the policy bounds the damping (with
// RetryNTimes(3, 2*time.Second), about 6s at most). Each suspension
// during damping is a flap damped: it is reported to the Observer
// (FlapDamped) and logged at Debug; the start and end of the damping at
// Info.
//
// While damping lasts, Campaign waits before it joins the election, and a
// keeper before it looks at its node, each within its ctx (Close ends the
// wait). Only acting again is held back: a loss is still reported at
// once, as without damping (a Lease's Done closes at the suspension under
// LoseOnSuspended, Subscribe and the Observer see every state change, and
// a keeper's Status says its node is not known to be in place). Locks,
// semaphores, caches and watches are not damped.
//
// A nil policy, or one built from impossible arguments, makes Connect and
// NewSession fail with ErrInvalidArgument. Default: off (a recipe acts as
// soon as the connection is back).
func WithFlapDamping(policy RetryPolicy) SessionOption {
	return func(c *sessionConfig) {
		if err := validatePolicy(policy); err != nil {
			c.fail(err)
			return
		}
		c.damping = policy
	}
}

// FlapEvent reports a connection flap damped (see WithFlapDamping): the
// connection was suspended again while damping from an earlier
// suspension was under way, so the recipes waiting for it to settle did
// not act on the reconnection in between.
type FlapEvent struct {
	SessionID int64 // the ZooKeeper session the suspension refers to
	// Flaps counts the flaps damped since the damping began, this one
	// included: with damping, a burst of n suspensions reports n-1.
	Flaps int
	// Since is the time from the suspension that began the damping.
	Since time.Duration
}

// damper is the circuit of WithFlapDamping (mechanism: docs/design-session.md,
// "Flap damping"). The Session tells it every state change, under s.mu;
// it never takes s.mu, so its timer may run while s.mu is held elsewhere.
type damper struct {
	policy RetryPolicy
	log    *slog.Logger

	mu      sync.Mutex
	up      bool          // the connection is up (CONNECTED, RECONNECTED)
	open    bool          // damping is under way
	settled chan struct{} // closed while damping is not under way
	bo      BackOff       // of the damping under way
	flapped bool          // a suspension came during the current wait
	flaps   int           // flaps damped since the damping began
	since   time.Time     // when the damping began
	timer   *time.Timer
	stopped bool
	pending []FlapEvent // flaps the Observer is yet to be told (reportStates)
}

func newDamper(policy RetryPolicy, log *slog.Logger) *damper {
	d := &damper{policy: policy, log: log, settled: make(chan struct{})}
	close(d.settled)
	return d
}

// state takes a state change of the Session (s.mu held). It reports
// whether a flap was damped: the Observer is then to be told (report).
func (d *damper) state(st ConnState, sid int64, obs bool) (damped bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return false
	}
	wasUp := d.up
	d.up = st.connected()
	switch {
	case st == StateClosed:
		d.stopped = true
		if d.timer != nil {
			d.timer.Stop()
		}
		d.endLocked()
	case d.up || !wasUp:
		// Back up, or still down (LOST after SUSPENDED): no new flap.
	case !d.open:
		d.open, d.flapped, d.flaps, d.since = true, false, 0, time.Now()
		d.bo = d.policy()
		d.settled = make(chan struct{})
		d.log.Info("zkrecipes: connection lost; recipes wait for it to settle before they act again (flap damping)", "state", st.String())
		d.armLocked()
	default:
		d.flapped = true
		d.flaps++
		d.log.Debug("zkrecipes: connection flap damped", "flaps", d.flaps, "since", time.Since(d.since).Round(time.Millisecond))
		if obs {
			d.pending = append(d.pending, FlapEvent{SessionID: sid, Flaps: d.flaps, Since: time.Since(d.since)})
		}
		return true
	}
	return false
}

// armLocked starts the next wait of the damping, or ends it if the policy
// gives up.
func (d *damper) armLocked() {
	w := d.bo.NextBackOff()
	if w == Stop {
		d.endLocked()
		return
	}
	d.timer = time.AfterFunc(w, d.check)
}

// check ends a wait: the damping ends if the connection is up and was not
// suspended during it; otherwise another wait starts.
func (d *damper) check() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || !d.open {
		return
	}
	if d.up && !d.flapped {
		d.endLocked()
		return
	}
	d.flapped = false
	d.armLocked()
}

func (d *damper) endLocked() {
	if !d.open {
		return
	}
	d.open = false
	d.timer = nil
	close(d.settled)
	if !d.stopped {
		d.log.Info("zkrecipes: connection settled; recipes act again (flap damping)", "flaps", d.flaps, "after", time.Since(d.since).Round(time.Millisecond), "up", d.up)
	}
}

// wait returns a channel closed while no damping is under way.
func (d *damper) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.settled
}

// report tells o the flaps damped not yet reported, without d.mu held.
func (d *damper) report(o Observer) {
	d.mu.Lock()
	evs := d.pending
	d.pending = nil
	d.mu.Unlock()
	for _, ev := range evs {
		o.FlapDamped(ev)
	}
}

// settled waits until no flap damping is under way (at once without
// WithFlapDamping). It fails with ctx's error, or ErrClosed once the
// Session is closed.
func (s *Session) settled(ctx context.Context) error {
	if s.damp == nil {
		return nil
	}
	select {
	case <-s.damp.wait():
		if s.isClosed() {
			return ErrClosed
		}
		return nil
	case <-s.closedCh:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}
