package zkrecipes

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ConnState is the state of a Session's link to ZooKeeper. The names and
// transitions are Curator's, so runbooks written for Curator apply.
type ConnState int

const (
	// StateConnecting: no ZooKeeper session has been established yet.
	StateConnecting ConnState = iota
	// StateConnected: the first ZooKeeper session is established.
	StateConnected
	// StateSuspended: the connection is lost; the session may still be
	// alive on the server. Ownership is in doubt from here on.
	StateSuspended
	// StateReconnected: the connection is back, either under the same
	// session (after Suspended) or under a new one (after Lost).
	StateReconnected
	// StateLost: the session is gone: expired by the server, replaced by a
	// new session id, or presumed expired after the client was cut off for
	// the whole session timeout. Every ephemeral node of it is lost.
	// It is also where a Session ends up that cannot connect again for a
	// reason retrying cannot mend (StateChange.Err matches ErrAuthFailed,
	// ErrSASLRequired, ErrTLSRefused or ErrTLSUntrusted): no reconnection
	// follows then, and the Session's calls fail with that error.
	StateLost
	// StateClosed: Close was called. Terminal.
	StateClosed
)

func (s ConnState) String() string {
	switch s {
	case StateConnecting:
		return "CONNECTING"
	case StateConnected:
		return "CONNECTED"
	case StateSuspended:
		return "SUSPENDED"
	case StateReconnected:
		return "RECONNECTED"
	case StateLost:
		return "LOST"
	case StateClosed:
		return "CLOSED"
	}
	return fmt.Sprintf("ConnState(%d)", int(s))
}

// connected reports whether requests can be expected to reach the server.
func (s ConnState) connected() bool { return s == StateConnected || s == StateReconnected }

// StateChange is one transition of a Session's ConnState.
type StateChange struct {
	State     ConnState
	SessionID int64     // the ZooKeeper session id the state refers to (0 if none)
	Err       error     // for StateLost and StateClosed: why
	At        time.Time // when the Session observed it
}

// LossPolicy decides when a Session considers ownership lost, like
// Curator's ConnectionStateErrorPolicy.
type LossPolicy int

const (
	// LoseOnSuspended ends every lease as soon as the connection is lost
	// (SUSPENDED). This is the default, and the only safe choice: once the
	// client is cut off, the server may expire the session and grant the
	// lock to another client before this one can find out (Curator Tech
	// Note 14).
	LoseOnSuspended LossPolicy = iota
	// LoseOnLost keeps leases through SUSPENDED and ends them only when the
	// session is lost. It rides out short network blips, at the price of a
	// window in which two clients may both believe they hold a lock: use it
	// only with fencing tokens checked by the protected resource.
	LoseOnLost
)

func (p LossPolicy) String() string {
	switch p {
	case LoseOnSuspended:
		return "LoseOnSuspended"
	case LoseOnLost:
		return "LoseOnLost"
	}
	return fmt.Sprintf("LossPolicy(%d)", int(p))
}

// signal is a one-shot broadcast with a reason: done closes once, err says why.
type signal struct {
	done chan struct{}
	err  error // written before done closes

	mu    sync.Mutex
	hooks map[int]func() // run by fire; see onFire
	next  int
}

func newSignal() *signal { return &signal{done: make(chan struct{})} }

// fire closes the signal with err unless it is already closed, then runs
// the hooks registered with onFire on the caller's goroutine.
func (s *signal) fire(err error) {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	s.err = err
	close(s.done)
	hooks := s.hooks
	s.hooks = nil
	s.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// onFire has f run when the signal fires (at once if it has), on the
// goroutine that fires it, which may hold the Session's mutex: f must not
// block. The returned function unregisters f.
func (s *signal) onFire(f func()) (cancel func()) {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		f()
		return func() {}
	default:
	}
	if s.hooks == nil {
		s.hooks = map[int]func(){}
	}
	id := s.next
	s.next++
	s.hooks[id] = f
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.hooks, id)
		s.mu.Unlock()
	}
}

func (s *signal) fired() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// enqueue is the client's event callback: it never blocks. It queues
// session events and the deletions of held nodes (holdwatch.go); other
// node events reach their watchers directly.
func (s *Session) enqueue(ev zk.Event) {
	switch {
	case ev.Type == zk.EventSession:
	case ev.Type == zk.EventNodeDeleted && s.held.deleted(ev.Path):
	default:
		return
	}
	s.qmu.Lock()
	s.queue = append(s.queue, ev)
	s.qmu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Session) drain() {
	defer s.wg.Done()
	for {
		select {
		case <-s.wake:
		case <-s.closedCh:
			return
		}
		s.qmu.Lock()
		batch := s.queue
		s.queue = nil
		s.qmu.Unlock()
		for _, ev := range batch {
			switch ev.Type {
			case zk.EventSession:
				s.onSessionEvent(ev)
			case zk.EventNodeDeleted:
				if h := s.held.get(ev.Path); h != nil {
					h.lose(lost(ErrNodeDeleted), false)
				}
			}
		}
	}
}

func (s *Session) onSessionEvent(ev zk.Event) {
	s.mu.Lock()
	defer s.unlockReport()
	if s.closed {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		id := s.conn.SessionID()
		s.stopSuspendTimer()
		switch {
		case s.state == StateConnecting:
			s.gen = &generation{id: id, signal: newSignal()}
			s.epoch = newSignal()
			s.setState(StateConnected, id, nil)
			close(s.ready)
		case id == s.gen.id && !s.gen.fired():
			if s.state == StateSuspended {
				// LoseOnSuspended ended the epoch at the disconnect; under
				// LoseOnLost it goes on, and what was granted in it must
				// still hear of its end (an expiry, Close).
				if s.epoch.fired() {
					s.epoch = newSignal()
				}
				s.setState(StateReconnected, id, nil)
				close(s.ready)
			}
		default:
			// The client is back under another session id, or under the
			// same one after this Session presumed it lost: everything
			// granted under the old generation has ended.
			if !s.gen.fired() {
				s.loseLocked(ErrSessionChanged)
			}
			s.gen = &generation{id: id, signal: newSignal()}
			s.epoch = newSignal()
			s.setState(StateReconnected, id, nil)
			close(s.ready)
		}
	case zk.StateDisconnected:
		if s.state.connected() {
			// The state first: a recipe that acts again on the loss
			// (Election.Run campaigning again) must find flap damping
			// already under way.
			s.ready = make(chan struct{})
			s.setState(StateSuspended, s.gen.id, nil)
			if s.cfg.policy == LoseOnSuspended {
				s.epoch.fire(lost(ErrSuspended))
			}
			gen := s.gen
			s.suspendT = time.AfterFunc(s.grantedTimeout(), func() { s.presumeLost(gen) })
		}
	case zk.StateExpired:
		if !s.gen.fired() && s.state != StateConnecting {
			s.loseLocked(ErrSessionExpired)
		}
	case zk.StateAuthFailed:
		s.cfg.log.Error("zkrecipes: zookeeper authentication failed", "session", fmt.Sprintf("0x%x", s.gen.id))
		if !s.gen.fired() && s.state != StateConnecting {
			s.loseLocked(fmt.Errorf("%w: authentication failed", ErrSessionExpired))
		}
	}
}

// presumeLost ends a generation whose connection has been down for the
// whole session timeout: the server has expired it by now, or will before
// this client can tell.
func (s *Session) presumeLost(gen *generation) {
	s.mu.Lock()
	defer s.unlockReport()
	if s.closed || s.gen != gen || gen.fired() || s.state != StateSuspended {
		return
	}
	s.loseLocked(fmt.Errorf("%w: disconnected for the whole session timeout (%v)", ErrSessionExpired, s.grantedTimeout()))
}

func (s *Session) loseLocked(cause error) {
	err := lost(cause)
	if s.state.connected() {
		s.ready = make(chan struct{})
	}
	s.stopSuspendTimer()
	s.setState(StateLost, s.gen.id, cause) // before the loss signals, as at a suspension
	s.epoch.fire(err)
	s.gen.fire(err)
}

func (s *Session) stopSuspendTimer() {
	if s.suspendT != nil {
		s.suspendT.Stop()
		s.suspendT = nil
	}
}

func (s *Session) setState(st ConnState, id int64, err error) {
	s.state = st
	ch := StateChange{State: st, SessionID: id, Err: err, At: time.Now()}
	lvl := slog.LevelInfo
	if st == StateLost || st == StateSuspended {
		lvl = slog.LevelWarn
	}
	s.cfg.log.Log(context.Background(), lvl, "zkrecipes: connection state", "state", st.String(), "session", fmt.Sprintf("0x%x", id), "err", err)
	for sub := range s.subs {
		sub.push(ch)
	}
	if s.damp != nil {
		s.damp.state(st, id, s.cfg.obs != nil) // flapdamping.go
	}
	if s.cfg.obs != nil {
		s.observed = append(s.observed, ch) // reported once s.mu is released (unlockReport)
	}
}

// unlockReport releases s.mu, then reports the state changes made under
// it to the Observer. Every holder of s.mu that may have changed the state
// releases it this way.
func (s *Session) unlockReport() {
	s.mu.Unlock()
	s.reportStates()
}

// reportStates reports the queued state changes to the Observer, in the
// order they were made, without s.mu held: the Observer may read the
// Session back. One goroutine at a time reports; the queue is taken under
// s.mu, so a change queued while another goroutine reports is reported by
// whichever takes reportMu next, never out of order.
func (s *Session) reportStates() {
	if s.cfg.obs == nil {
		return
	}
	s.reportMu.Lock()
	defer s.reportMu.Unlock()
	for {
		s.mu.Lock()
		batch := s.observed
		s.observed = nil
		s.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, ch := range batch {
			s.reportState(ch) // observe.go
		}
		if s.damp != nil {
			s.damp.report(s.cfg.obs) // the flaps damped at these changes
		}
	}
}

// State returns the current connection state.
func (s *Session) State() ConnState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// SessionID returns the id of the current ZooKeeper session (0 before the
// first one).
func (s *Session) SessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen.id
}

// Done returns a channel that is closed when the ZooKeeper session current
// at the time of the call is lost (expired, replaced by a new session id,
// presumed expired) or the Session is closed. The Session itself goes on
// under a new ZooKeeper session; call Done again to watch that one.
func (s *Session) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen.done
}

// Err returns nil while the current ZooKeeper session lives. After it is
// lost and before a new one is established, Err says why (it matches
// ErrLockLost and ErrSessionExpired or ErrSessionChanged, or the error
// that stopped reconnection: ErrAuthFailed, ErrSASLRequired, ErrTLSRefused,
// ErrTLSUntrusted); after Close it returns ErrClosed.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.gen.fired() {
		return s.gen.err
	}
	return nil
}

// current returns the current generation and ownership epoch.
func (s *Session) current() (*generation, *signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, s.epoch
}

// ended reports whether the Session is closed or lost for good: it will
// not connect again.
func (s *Session) ended() bool { return s.isClosed() || s.fatal.fired() }

// endErr is why the Session ended what runs on it (watches, caches): the
// error that stopped it reconnecting for good (secure.go), or ErrClosed.
func (s *Session) endErr() error {
	if !s.isClosed() && s.fatal.fired() {
		return s.fatal.err
	}
	return ErrClosed
}

// untilEnded returns a context that ends when the Session closes or is
// lost for good (at once if it has), or when cancel is called.
func (s *Session) untilEnded() (context.Context, context.CancelFunc) {
	ctx, stop := ctxUntil(s.closedCh)
	unhook := s.fatal.onFire(stop)
	return ctx, func() { unhook(); stop() }
}

// awaitConnected waits until the Session is connected and returns the
// current generation. It fails with ErrClosed or ctx's error.
func (s *Session) awaitConnected(ctx context.Context) (*generation, *signal, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if s.state.connected() {
			g, e := s.gen, s.epoch
			s.mu.Unlock()
			return g, e, nil
		}
		if s.fatal.fired() {
			s.mu.Unlock()
			return nil, nil, s.fatal.err
		}
		ready := s.ready
		s.mu.Unlock()
		select {
		case <-ready:
		case <-s.fatal.done:
		case <-s.closedCh:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}
