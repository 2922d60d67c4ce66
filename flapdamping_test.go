package zkrecipes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func isSettled(d *damper) bool {
	select {
	case <-d.wait():
		return true
	default:
		return false
	}
}

// waitSettled waits (generously) for the damping to end.
func waitSettled(t *testing.T, d *damper, within time.Duration) {
	t.Helper()
	select {
	case <-d.wait():
	case <-time.After(within):
		t.Fatalf("damping not over after %v", within)
	}
}

func TestFlapDamping_NothingHeldBackBeforeASuspension(t *testing.T) {
	d := newDamper(RetryForever(time.Hour), quietLog())
	d.state(StateConnected, 1, true)
	if !isSettled(d) {
		t.Fatal("recipes held back on a connection that never dropped")
	}
}

func TestFlapDamping_HoldsBackUntilTheConnectionStaysUpForAWait(t *testing.T) {
	d := newDamper(RetryForever(50*time.Millisecond), quietLog())
	d.state(StateConnected, 1, true)
	d.state(StateSuspended, 1, true)
	if isSettled(d) {
		t.Fatal("not held back after a suspension")
	}
	// Down across several waits: still held back.
	start := time.Now()
	for time.Since(start) < 300*time.Millisecond {
		if isSettled(d) {
			t.Fatal("let go while the connection was down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.state(StateReconnected, 1, true)
	waitSettled(t, d, 10*time.Second)
}

func TestFlapDamping_CountsEachSuspensionDuringTheDampingAsAFlap(t *testing.T) {
	d := newDamper(RetryForever(time.Hour), quietLog())
	d.state(StateConnected, 1, true)
	if d.state(StateSuspended, 1, true) {
		t.Fatal("the suspension that begins the damping counted as a flap")
	}
	for i := 1; i <= 3; i++ {
		d.state(StateReconnected, 1, true)
		if !d.state(StateSuspended, 1, true) {
			t.Fatalf("flap %d not damped", i)
		}
	}
	// LOST right after SUSPENDED is the same outage, not a new flap.
	if d.state(StateLost, 1, true) {
		t.Fatal("LOST after SUSPENDED counted as a flap")
	}
	var got []FlapEvent
	d.report(flapRecorder{&got})
	if len(got) != 3 || got[2].Flaps != 3 || got[0].Flaps != 1 || got[2].SessionID != 1 {
		t.Fatalf("flaps reported: %+v, want 3 counting 1, 2, 3", got)
	}
	d.report(flapRecorder{&got})
	if len(got) != 3 {
		t.Fatalf("flaps reported twice: %+v", got)
	}
}

type flapRecorder struct{ got *[]FlapEvent }

func (flapRecorder) OpDone(context.Context, OpEvent) {}
func (flapRecorder) AcquireStart(ctx context.Context, _ AcquireStartEvent) context.Context {
	return ctx
}
func (flapRecorder) AcquireEnd(context.Context, AcquireEndEvent) {}
func (flapRecorder) LeaseEnd(context.Context, LeaseEndEvent)     {}
func (flapRecorder) StateChanged(StateChange)                    {}
func (flapRecorder) CacheSynced(CacheSyncEvent)                  {}
func (flapRecorder) CacheBacklog(CacheBacklogEvent)              {}
func (r flapRecorder) FlapDamped(ev FlapEvent)                   { *r.got = append(*r.got, ev) }

func TestFlapDamping_AFlapDuringAWaitStartsAnother(t *testing.T) {
	const wait = 200 * time.Millisecond
	d := newDamper(RetryForever(wait), quietLog())
	d.state(StateConnected, 1, true)
	start := time.Now()
	d.state(StateSuspended, 1, true)
	d.state(StateReconnected, 1, true)
	d.state(StateSuspended, 1, true)
	d.state(StateReconnected, 1, true)
	waitSettled(t, d, 10*time.Second)
	if took := time.Since(start); took < 2*wait {
		t.Fatalf("settled after %v: a wait with a flap in it must not end the damping (want >= %v)", took, 2*wait)
	}
}

func TestFlapDamping_EndsWhenThePolicyGivesUpEvenIfStillDown(t *testing.T) {
	d := newDamper(RetryNTimes(2, 20*time.Millisecond), quietLog())
	d.state(StateConnected, 1, true)
	d.state(StateSuspended, 1, true)
	waitSettled(t, d, 10*time.Second)
	// The next suspension begins a new damping, with a fresh policy.
	d.state(StateReconnected, 1, true)
	d.state(StateSuspended, 1, true)
	if isSettled(d) {
		t.Fatal("a new suspension after the damping ended did not begin another")
	}
	waitSettled(t, d, 10*time.Second)
}

func TestFlapDamping_CloseLetsWaitersGo(t *testing.T) {
	d := newDamper(RetryForever(time.Hour), quietLog())
	d.state(StateConnected, 1, true)
	d.state(StateSuspended, 1, true)
	d.state(StateClosed, 1, true)
	if !isSettled(d) {
		t.Fatal("Close left recipes waiting")
	}
	if d.state(StateSuspended, 1, true) || !isSettled(d) {
		t.Fatal("a closed damper began damping again")
	}
}

func TestWithFlapDamping_RefusesANilOrImpossiblePolicy(t *testing.T) {
	for name, p := range map[string]RetryPolicy{"nil": nil, "impossible": RetryNTimes(-1, time.Second)} {
		_, err := buildConfig([]SessionOption{WithFlapDamping(p)})
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s policy: got %v, want ErrInvalidArgument", name, err)
		}
	}
	cfg, err := buildConfig(nil)
	if err != nil || cfg.damping != nil {
		t.Fatalf("default: damping %v, err %v; want off", cfg.damping != nil, err)
	}
}
