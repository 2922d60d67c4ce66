package testclient

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends the goroutine,
// as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// waitState runs WaitState on its own goroutine (Fatalf ends it) and returns the failure
// message, "" when it returned.
func waitState(e *Events, from int, state zk.State, within time.Duration) string {
	r := &fatalRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.WaitState(r, from, state, within)
	}()
	<-done
	return r.msg
}

func TestWaitState_ReturnsOnceTheStateIsRecordedFromTheIndexOn(t *testing.T) {
	e := newEvents()
	e.callback(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	e.callback(zk.Event{Type: zk.EventNodeCreated, State: zk.StateDisconnected}) // not a session event
	if msg := waitState(e, 0, zk.StateHasSession, time.Minute); msg != "" {
		t.Fatalf("a recorded state failed the wait: %s", msg)
	}
	go func() {
		e.callback(zk.Event{Type: zk.EventSession, State: zk.StateDisconnected})
	}()
	if msg := waitState(e, 1, zk.StateDisconnected, time.Minute); msg != "" {
		t.Fatalf("a state recorded by another goroutine failed the wait: %s", msg)
	}
	if got := e.Since(1); len(got) != 1 || got[0] != zk.StateDisconnected || e.Len() != 2 {
		t.Fatalf("Since(1) = %v, Len() = %d; want [%v], 2", got, e.Len(), zk.StateDisconnected)
	}
}

func TestWaitState_FailsTheTestWhenTheStateIsNotSeenInTime(t *testing.T) {
	e := newEvents()
	e.callback(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	msg := waitState(e, 1, zk.StateHasSession, 50*time.Millisecond)
	if want := "state StateHasSession not seen within 50ms; saw []"; msg != want {
		t.Fatalf("failure message %q, want %q (a state before the index does not count)", msg, want)
	}
}
