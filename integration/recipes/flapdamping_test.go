package recipes_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// flapObserver counts an Election's campaigns (the acquisitions it
// starts), a keeper's looks at its node (getData on path), the
// suspensions and the flaps damped.
//
// The shared server grants at most 4s sessions, so a busy machine can
// drop a connection on its own now and then (a read timeout of 2/3 of
// that): the tests allow for suspensions beyond the ones they cause,
// which can only lengthen a damping, never shorten it.
type flapObserver struct {
	zr.BaseObserver
	path        string // set before the Session
	campaigns   atomic.Int64
	looks       atomic.Int64
	suspensions atomic.Int64
	flaps       atomic.Int64
}

func (o *flapObserver) StateChanged(ev zr.StateChange) {
	if ev.State == zr.StateSuspended {
		o.suspensions.Add(1)
	}
}

// dampedAll checks the flaps damped: every suspension after the first of
// a burst of n, and no more than the suspensions seen.
func (o *flapObserver) dampedAll(t *testing.T, n int) {
	t.Helper()
	damped, sus := o.flaps.Load(), o.suspensions.Load()
	assert.GreaterOrEqual(t, damped, int64(n-1), "flaps damped: every suspension after the first")
	assert.LessOrEqual(t, damped, sus-1, "flaps damped beyond the suspensions seen (%d)", sus)
}

func (o *flapObserver) OpDone(_ context.Context, ev zr.OpEvent) {
	if ev.Op == "getData" && ev.Path == o.path {
		o.looks.Add(1)
	}
}

func (o *flapObserver) AcquireStart(ctx context.Context, ev zr.AcquireStartEvent) context.Context {
	if ev.Recipe.Kind == zr.KindElection {
		o.campaigns.Add(1)
	}
	return ctx
}

func (o *flapObserver) FlapDamped(zr.FlapEvent) { o.flaps.Add(1) }

// flapRig is a leader (Election.Run with WithRequeue) on a Session whose
// only way to the server is a fault proxy.
type flapRig struct {
	proxy  *zktest.Proxy
	obs    *flapObserver
	states *states
	terms  chan *zr.Lease // each term of leadership, as it starts
	stop   func()         // ends Run and waits for it
}

func newFlapRig(t *testing.T, opts ...zr.SessionOption) *flapRig {
	c := server(t)
	r := &flapRig{proxy: zktest.NewProxy(t, c.Servers()[0]), obs: &flapObserver{}, terms: make(chan *zr.Lease, 64)}
	s := connect(t, c, []string{r.proxy.Addr()}, append(opts, zr.WithObserver(r.obs))...)
	r.states = watchStates(t, s.Session)
	e := zr.NewElection(s.Session, testPath(t))
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctx, func(ctx context.Context, l *zr.Lease) error {
			r.terms <- l
			<-ctx.Done()
			return nil
		}, zr.WithRequeue(true))
	}()
	r.stop = func() {
		cancel()
		select {
		case <-ran:
		case <-time.After(30 * time.Second):
			t.Error("Election.Run did not return after its ctx ended")
		}
	}
	t.Cleanup(r.stop)
	return r
}

// term waits up to d for the next term of leadership; nil if none starts.
func (r *flapRig) term(d time.Duration) *zr.Lease {
	select {
	case l := <-r.terms:
		return l
	case <-time.After(d):
		return nil
	}
}

// lossReported bounds the time from SUSPENDED to a lease's Done: the
// lease ends on a goroutine of its own right after the suspension, and
// must not wait for the connection to settle (a damping wait is longer).
const lossReported = 5 * time.Second

// flap drops the Session's connection and waits until it is back, under
// the same session. held, if not nil, is the leadership held when the
// connection drops: it must be reported lost at the suspension.
func (r *flapRig) flap(t *testing.T, held *zr.Lease) time.Time {
	t.Helper()
	r.proxy.ResetAll()
	sus := r.states.next(t, 30*time.Second, zr.StateSuspended, zr.StateLost)
	require.Equal(t, zr.StateSuspended, sus.State)
	if held != nil {
		select {
		case <-held.Done():
		case <-time.After(max(lossReported-time.Since(sus.At), 0)):
			select {
			case <-held.Done(): // reported by then, seen late (states.next returned late)
			default:
				t.Fatalf("leadership not reported lost within %v of the suspension", lossReported)
			}
		}
		require.ErrorIs(t, held.Err(), zr.ErrSuspended)
	}
	back := r.states.next(t, 30*time.Second, zr.StateReconnected, zr.StateLost)
	require.Equal(t, zr.StateReconnected, back.State, "the session should survive a short flap")
	require.Equal(t, sus.SessionID, back.SessionID)
	return sus.At
}

// Without flap damping, a leader that loses its leadership at each flap
// of the connection campaigns again at each reconnection, and leads
// again: one campaign and one term per flap.
func TestFlapDamping_OffLeaderCampaignsAgainAtEachReconnection(t *testing.T) {
	const flaps = 3
	r := newFlapRig(t)
	l := r.term(30 * time.Second)
	require.NotNil(t, l, "no first term")
	for i := 0; i < flaps; i++ {
		r.flap(t, l)
		l = r.term(30 * time.Second)
		require.NotNil(t, l, "no term after flap %d", i+1)
	}
	assert.GreaterOrEqual(t, r.obs.campaigns.Load(), int64(flaps+1), "a campaign per flap")
	assert.Zero(t, r.obs.flaps.Load(), "flaps damped without damping")
}

// With flap damping, the leader still learns of its loss at the first
// flap, but a burst of flaps makes it campaign only once the connection
// has settled: no campaign during the burst, one after it, no sooner
// than a damping wait after the last flap, and the flaps damped counted.
func TestFlapDamping_OnLeaderCampaignsOnceAfterABurstOfFlaps(t *testing.T) {
	const (
		flaps = 3
		wait  = 8 * time.Second // a damping wait: longer than a flap (about 1s to reconnect) and the pause after it
		pause = 2 * time.Second // after each reconnection, the time given to a campaign to show up
	)
	r := newFlapRig(t, zr.WithFlapDamping(zr.RetryNTimes(20, wait)))
	l := r.term(30 * time.Second)
	require.NotNil(t, l, "no first term")
	var last time.Time
	for i := 0; i < flaps; i++ {
		last = r.flap(t, l)
		l = nil // lost at the first flap; not led since
		require.Nil(t, r.term(pause), "campaigned and led during the burst, after flap %d", i+1)
	}
	assert.EqualValues(t, 1, r.obs.campaigns.Load(), "campaigns during the burst")

	l = r.term(5 * wait)
	require.NotNil(t, l, "no campaign once the connection settled")
	assert.GreaterOrEqual(t, time.Since(last), wait, "campaigned before a whole damping wait after the last flap")
	r.obs.dampedAll(t, flaps)
	assert.GreaterOrEqual(t, r.obs.campaigns.Load(), int64(2), "campaigns in all")
}

// A kept node (PersistentNode, and so GroupMember and a discovery
// registration) through a burst of flaps: its status says "not in place"
// from each suspension on, in both cases. Without damping the keeper
// looks at its node again at each reconnection; with damping it looks
// only once the connection has settled, no sooner than a damping wait
// after the last flap.
func TestFlapDamping_KeeperLooksAtItsNodeAtEachReconnectionOrOnceSettled(t *testing.T) {
	const (
		flaps = 3
		wait  = 8 * time.Second
		pause = 2 * time.Second
	)
	for _, damped := range []bool{false, true} {
		name := "off"
		if damped {
			name = "on"
		}
		t.Run(name, func(t *testing.T) {
			c := server(t)
			proxy := zktest.NewProxy(t, c.Servers()[0])
			path := testPath(t) + "/member"
			obs := &flapObserver{path: path}
			opts := []zr.SessionOption{zr.WithObserver(obs)}
			if damped {
				opts = append(opts, zr.WithFlapDamping(zr.RetryNTimes(20, wait)))
			}
			s := connect(t, c, []string{proxy.Addr()}, opts...)
			st := watchStates(t, s.Session)
			n := zr.NewPersistentNode(s.Session, path, []byte("here"))
			require.NoError(t, n.Start(context.Background()))
			t.Cleanup(func() { _ = n.Close(context.Background()) })
			require.NoError(t, n.WaitInPlace(ctxT(t, 30*time.Second)))
			looks := obs.looks.Load()
			inPlace := func() bool { status, _ := n.Status(); return status.InPlace }

			var last time.Time
			for i := 0; i < flaps; i++ {
				proxy.ResetAll()
				sus := st.next(t, 30*time.Second, zr.StateSuspended, zr.StateLost)
				require.Equal(t, zr.StateSuspended, sus.State)
				last = sus.At
				require.Eventually(t, func() bool { return !inPlace() }, lossReported, 5*time.Millisecond,
					"status still in place after the suspension")
				back := st.next(t, 30*time.Second, zr.StateReconnected, zr.StateLost)
				require.Equal(t, zr.StateReconnected, back.State)
				if !damped {
					require.NoError(t, n.WaitInPlace(ctxT(t, 30*time.Second)), "flap %d", i+1)
					require.GreaterOrEqual(t, obs.looks.Load(), looks+int64(i)+1, "a look per reconnection")
					continue
				}
				require.Never(t, inPlace, pause, 50*time.Millisecond, "in place again during the burst, after flap %d", i+1)
				require.Equal(t, looks, obs.looks.Load(), "looked at its node during the burst")
			}
			if damped {
				require.NoError(t, n.WaitInPlace(ctxT(t, 5*wait)))
				assert.GreaterOrEqual(t, time.Since(last), wait, "looked before a whole damping wait after the last flap")
				obs.dampedAll(t, flaps)
				extra := obs.suspensions.Load() - flaps // the machine's own, if any
				assert.GreaterOrEqual(t, obs.looks.Load(), looks+1, "a look once settled")
				assert.LessOrEqual(t, obs.looks.Load(), looks+1+extra, "more than one look once settled")
			}
		})
	}
}
