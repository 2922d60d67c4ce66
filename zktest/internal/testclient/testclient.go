// Package testclient opens go-zookeeper clients for the tests of package zktest and of
// its Docker backend's module (github.com/zkrecipes/zkrecipes/zktest/docker), and records
// their session events. It imports nothing but the standard library, go-zookeeper and
// zktest, so that zktest's users get no dependency from it.
package testclient

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// Events records a client's session events without ever blocking the client.
type Events struct {
	mu      sync.Mutex
	all     []zk.Event
	changed chan struct{} // closed, then replaced, at each recorded event
}

func newEvents() *Events { return &Events{changed: make(chan struct{})} }

func (e *Events) callback(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
	close(e.changed)
	e.changed = make(chan struct{})
}

// Since returns the states seen from index i on.
func (e *Events) Since(i int) []zk.State {
	s, _ := e.since(i)
	return s
}

// since returns the states seen from index i on and a channel closed at the next event.
func (e *Events) since(i int) ([]zk.State, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var s []zk.State
	for _, ev := range e.all[min(i, len(e.all)):] {
		s = append(s, ev.State)
	}
	return s, e.changed
}

// Len returns how many events were recorded: an index for Since and WaitState.
func (e *Events) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.all)
}

// WaitState waits until state appears among the events recorded from index from on, and
// fails the test (from the test's goroutine only) when it has not within within.
func (e *Events) WaitState(t testing.TB, from int, state zk.State, within time.Duration) {
	t.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		seen, changed := e.since(from)
		if slices.Contains(seen, state) {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("state %v not seen within %v; saw %v", state, within, e.Since(from))
		}
	}
}

// Connect opens a go-zookeeper client to servers and waits (30 s at most) for its
// session; the test's cleanup closes it. A nil dialer means a plain loopback dialer.
func Connect(t testing.TB, servers []string, timeout time.Duration, dialer zk.Dialer) (*zk.Conn, *Events) {
	t.Helper()
	ev := newEvents()
	if dialer == nil {
		dialer = (&zktest.SessionCapture{}).Dialer()
	}
	conn, ch, err := zk.Connect(servers, timeout, zk.WithDialer(dialer),
		zk.WithEventCallback(ev.callback), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("zk.Connect(%v): %v", servers, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range ch {
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	ev.WaitState(t, 0, zk.StateHasSession, 30*time.Second)
	return conn, ev
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
