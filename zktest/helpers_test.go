package zktest_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// events records a zk client's session events without ever blocking the client.
type events struct {
	mu  sync.Mutex
	all []zk.Event
}

func (e *events) callback(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// since returns the states seen from index i on.
func (e *events) since(i int) []zk.State {
	e.mu.Lock()
	defer e.mu.Unlock()
	var s []zk.State
	for _, ev := range e.all[min(i, len(e.all)):] {
		s = append(s, ev.State)
	}
	return s
}

func (e *events) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.all)
}

// waitState waits until state appears among the events recorded from index from on.
func (e *events) waitState(t *testing.T, from int, state zk.State, within time.Duration) {
	t.Helper()
	require.Eventuallyf(t, func() bool { return slices.Contains(e.since(from), state) },
		within, 20*time.Millisecond, "state %v not seen; saw %v", state, e.since(from))
}

// connect opens a go-zookeeper client and waits for its session. A nil dialer means
// a plain loopback dialer.
func connect(t *testing.T, servers []string, timeout time.Duration, dialer zk.Dialer) (*zk.Conn, *events) {
	t.Helper()
	ev := &events{}
	if dialer == nil {
		dialer = (&zktest.SessionCapture{}).Dialer()
	}
	conn, ch, err := zk.Connect(servers, timeout, zk.WithDialer(dialer),
		zk.WithEventCallback(ev.callback), zk.WithLogger(quietLogger{}))
	require.NoError(t, err)
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
	ev.waitState(t, 0, zk.StateHasSession, 30*time.Second)
	return conn, ev
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
