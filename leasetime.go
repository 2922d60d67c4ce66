package zkrecipes

import "time"

// WithLeaseTime ends each lease d after it was granted, even if its holder
// is alive and has not released it: the lease is lost (Done closes, Err
// matches ErrLockLost and ErrLeaseExpired), its node is deleted, and the
// next contender is granted with a higher Token. The leases of one
// reentrant holder share the one hold and so the one lease time, counted
// from the first grant. It applies to Mutex, both sides of an RWMutex,
// SemaphoreMutex and each lease of a Semaphore.
//
// The lease time is measured on this process's clock and enforced by this
// process: it cannot stop a holder that is paused (a long GC pause, a
// stopped VM) from acting on a lease it still believes it has. Guard every
// write with Token or Check as for any other loss. A d that is zero or
// negative makes every method of the recipe fail with ErrInvalidArgument.
// Default: no lease time; a lease lasts until it is released or lost.
func WithLeaseTime(d time.Duration) LockOption {
	return lockOpt(func(c *lockConfig) {
		if d <= 0 {
			c.err = invalidArg("lease time %v: must be positive", d)
			return
		}
		c.leaseTime = d
	})
}

// start arms what the options ask of a freshly granted hold: its lease
// time and its revocation watch. It passes acquire's results through.
func (c lockConfig) start(h *hold, err error) (*hold, error) {
	return c.startWithin(h, err, c.leaseTime)
}

// startWithin is start with the lease time given: a downgraded read hold
// continues its write hold's ownership, and so the rest of its lease time.
func (c lockConfig) startWithin(h *hold, err error, leaseTime time.Duration) (*hold, error) {
	if err != nil || h == nil {
		return h, err
	}
	if c.leaseTime > 0 {
		h.expireAfter(max(leaseTime, 0))
	}
	if c.revocable {
		h.watchRevoke()
	}
	return h, nil
}

// expireAfter has the hold lost after d, unless it ends first.
func (h *hold) expireAfter(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sig.fired() {
		return
	}
	// lose deletes the node in the background (and not at all once the
	// Session is closed: Close deletes it).
	h.expiresAt = time.Now().Add(d)
	h.expiry = time.AfterFunc(d, func() { h.lose(lost(ErrLeaseExpired), true) })
}

// leaseLeft is what is left of the hold's lease time (0 once it is over);
// meaningful only when the recipe has one.
func (h *hold) leaseLeft() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(time.Until(h.expiresAt), 0)
}

// stopExpiry stops the lease time's timer of a hold that ended.
func (h *hold) stopExpiry() {
	h.mu.Lock()
	t := h.expiry
	h.mu.Unlock()
	if t != nil {
		t.Stop()
	}
}
