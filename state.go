package zkrecipes

import (
	"fmt"
	"sync"
	"time"
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
