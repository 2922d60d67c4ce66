package zkrecipes

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readingObserver reads the Session back from StateChanged, as a metrics
// exporter does, and records what it was told and what it read.
type readingObserver struct {
	BaseObserver
	s    *Session
	mu   sync.Mutex
	seen []ConnState
	read []ConnState
}

func (o *readingObserver) StateChanged(ev StateChange) {
	st, _, _, _ := o.s.State(), o.s.SessionID(), o.s.Done(), o.s.Err()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, ev.State)
	o.read = append(o.read, st)
}

// Issue 42, defect 2: an Observer that calls the Session's state methods
// from StateChanged does not deadlock Close, and is told every change in
// order.
func TestObserverReadingTheSessionDoesNotDeadlockClose(t *testing.T) {
	o := &readingObserver{}
	cfg := defaultSessionConfig()
	cfg.obs = o
	s := newSession(cfg) // never dialled: Close on an adopted, empty Session does no I/O
	o.s = s
	ch, _ := s.Subscribe(context.Background()) // Close ends it

	closed := make(chan struct{})
	go func() { // before the fix, the first report deadlocks: the test waits below, bounded
		defer close(closed)
		s.mu.Lock()
		s.setState(StateConnected, 1, nil)
		s.setState(StateSuspended, 1, nil)
		s.unlockReport()
		assert.Equal(t, StateConnected, (<-ch).State, "Subscribe keeps its order")
		assert.Equal(t, StateSuspended, (<-ch).State, "Subscribe keeps its order")
		_ = s.Close()
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "Session.Close still blocked after 10s: the Observer's State() call deadlocked it")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Equal(t, []ConnState{StateConnected, StateSuspended, StateClosed}, o.seen, "every change, in order, before Close returns")
	assert.Equal(t, StateClosed, o.read[len(o.read)-1])
	for c := range ch { // closed by Close, perhaps after StateClosed
		assert.Equal(t, StateClosed, c.State)
	}
}
