package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

var layouts = []zr.ElectionLayout{zr.LatchLayout, zr.SelectorLayout}

// nodeWord is the name each layout gives its nodes.
func nodeWord(l zr.ElectionLayout) string {
	if l == zr.SelectorLayout {
		return "-lock-"
	}
	return "-latch-"
}

func TestElection_OneLeaderAmongManyAndEachLeadsInTurn(t *testing.T) {
	for _, layout := range layouts {
		t.Run(layout.String(), func(t *testing.T) {
			c := server(t)
			conn := raw(t, c)
			path := testPath(t)
			ctx := ctxT(t, time.Minute)
			const n, rounds = 4, 3
			var inside, overlaps atomic.Int64
			var mu sync.Mutex
			var tokens []int64
			errs := make(chan error, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				e := zr.NewElection(connect(t, c, nil).Session, path, zr.WithLayout(layout), zr.WithParticipantID(fmt.Sprintf("p%d", i)))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < rounds; r++ {
						err := e.Run(ctx, func(ctx context.Context, l *zr.Lease) error {
							if inside.Add(1) != 1 {
								overlaps.Add(1)
							}
							mu.Lock()
							tokens = append(tokens, l.Token())
							mu.Unlock()
							runtime_Gosched()
							inside.Add(-1)
							return nil
						})
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			assert.Zero(t, overlaps.Load(), "two leaders at once")
			require.Len(t, tokens, n*rounds)
			for i := 1; i < len(tokens); i++ {
				assert.Greater(t, tokens[i], tokens[i-1], "the leadership epoch increases from one term to the next")
			}
			for _, k := range children(t, conn, path) {
				t.Errorf("node left behind: %s", k)
			}
		})
	}
}

func TestElection_CampaignWritesCuratorNodesAndParticipantsListThemInLine(t *testing.T) {
	for _, layout := range layouts {
		t.Run(layout.String(), func(t *testing.T) {
			c := server(t)
			conn := raw(t, c)
			path := testPath(t)
			ctx := ctxT(t, 30*time.Second)
			a := zr.NewElection(connect(t, c, nil).Session, path, zr.WithLayout(layout), zr.WithParticipantID("alpha"))
			la, err := a.Campaign(ctx)
			require.NoError(t, err)
			again, err := a.Campaign(ctx)
			require.NoError(t, err)
			assert.Same(t, la, again, "Campaign while leading returns the current lease")

			var waiting []context.CancelFunc
			for _, id := range []string{"beta", "gamma"} {
				e := zr.NewElection(connect(t, c, nil).Session, path, zr.WithLayout(layout), zr.WithParticipantID(id))
				wctx, cancel := context.WithCancel(ctx)
				waiting = append(waiting, cancel)
				res := make(chan error, 1)
				go func() { _, err := e.Campaign(wctx); res <- err }()
				t.Cleanup(func() { cancel(); <-res })
				want := len(waiting) + 1
				require.Eventually(t, func() bool { return len(children(t, conn, path)) == want }, 10*time.Second, 5*time.Millisecond)
			}
			for _, k := range children(t, conn, path) {
				assert.Regexp(t, `^_c_[0-9a-f-]{36}`+nodeWord(layout)+`\d{10}$`, k)
			}
			observer := zr.NewElection(connect(t, c, nil).Session, path, zr.WithLayout(layout))
			ps, err := observer.Participants(ctx)
			require.NoError(t, err)
			require.Len(t, ps, 3)
			var ids []string
			for i, p := range ps {
				ids = append(ids, string(p.Data))
				assert.Equal(t, i == 0, p.Holder)
				assert.NotZero(t, p.SessionID)
			}
			assert.Equal(t, []string{"alpha", "beta", "gamma"}, ids, "leader first, then the line")
			leader, err := observer.Leader(ctx)
			require.NoError(t, err)
			assert.Equal(t, "alpha", string(leader.Data))
			assert.Equal(t, la.Token(), leader.Token)
			for _, cancel := range waiting {
				cancel()
			}
			require.NoError(t, a.Resign(ctx))
			require.Eventually(t, func() bool { return len(children(t, conn, path)) == 0 }, 10*time.Second, 5*time.Millisecond,
				"resign and cancelled campaigns leave no node")
			_, err = observer.Leader(ctx)
			assert.ErrorIs(t, err, zr.ErrNoLeader)
		})
	}
}

func TestElection_ResignHandsOverAtOnce(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	a := zr.NewElection(connect(t, c, nil).Session, path)
	b := zr.NewElection(connect(t, c, nil).Session, path)
	assert.NoError(t, a.Resign(ctx), "resign without leading is a no-op")
	la, err := a.Campaign(ctx)
	require.NoError(t, err)
	got := campaignBehind(t, ctx, b, 2)
	t0 := time.Now()
	require.NoError(t, a.Resign(ctx))
	lb := (<-got).lease(t)
	t.Logf("handover after resign: %v", time.Since(t0))
	assert.ErrorIs(t, la.Err(), zr.ErrReleased)
	assert.Greater(t, lb.Token(), la.Token())
	assert.NoError(t, a.Resign(ctx), "a second resign is a no-op")
	require.NoError(t, lb.Release(ctx), "a lease can be released directly too")
	assert.NoError(t, b.Resign(ctx))
}

func TestElection_FailoverWhenTheLeaderSessionExpires(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, time.Minute)
	// LoseOnLost, so that the expiry itself (not the SUSPENDED before it)
	// ends the leadership.
	leader := connect(t, c, nil, zr.WithLossPolicy(zr.LoseOnLost))
	la, err := zr.NewElection(leader.Session, path, zr.WithParticipantID("old")).Campaign(ctx)
	require.NoError(t, err)
	next := zr.NewElection(connect(t, c, nil).Session, path, zr.WithParticipantID("new"))
	got := campaignBehind(t, ctx, next, 2)
	leader.expire(t)
	select {
	case <-la.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the expired leader was not told")
	}
	assert.ErrorIs(t, la.Err(), zr.ErrLockLost)
	assert.ErrorIs(t, la.Err(), zr.ErrSessionExpired)
	lb := (<-got).lease(t)
	assert.Greater(t, lb.Token(), la.Token(), "the new epoch is above the old")
	require.NoError(t, lb.Release(ctx))
}

// A leader whose process stops answering (here: its connection goes
// silent, as when the process is killed or frozen) steps down locally at
// SUSPENDED, and the next participant leads once the server expires the
// session.
func TestElection_FailoverWhenTheLeaderGoesSilent(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, time.Minute)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	leader := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(3*time.Second))
	la, err := zr.NewElection(leader.Session, path).Campaign(ctx)
	require.NoError(t, err)
	next := zr.NewElection(connect(t, c, nil).Session, path)
	got := campaignBehind(t, ctx, next, 2)
	t0 := time.Now()
	proxy.Blackhole()
	<-la.Done()
	stepDown := time.Since(t0)
	assert.ErrorIs(t, la.Err(), zr.ErrSuspended)
	lb := (<-got).lease(t)
	takeOver := time.Since(t0)
	t.Logf("silent leader stepped down after %v; next leader took over after %v", stepDown, takeOver)
	assert.Less(t, stepDown, takeOver, "the old leader stops before the new one starts")
	assert.Greater(t, lb.Token(), la.Token())
	require.NoError(t, lb.Release(ctx))
}

func TestElection_RunCancelsFnOnSuspendedAndRequeues(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(6*time.Second))
	ctx := ctxT(t, time.Minute)
	e := zr.NewElection(cl.Session, testPath(t))
	type term struct {
		token int64
		cause error
	}
	terms := make(chan term, 4)
	rctx, stop := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() {
		runErr <- e.Run(rctx, func(fctx context.Context, l *zr.Lease) error {
			terms <- term{token: l.Token()}
			<-fctx.Done()
			terms <- term{token: l.Token(), cause: l.Err()}
			return fctx.Err()
		}, zr.WithRequeue(true))
	}()
	first := <-terms
	proxy.Blackhole()
	ended := <-terms
	assert.Equal(t, first.token, ended.token)
	assert.ErrorIs(t, ended.cause, zr.ErrSuspended, "fn's ctx ends at SUSPENDED")
	proxy.Heal()
	second := <-terms
	assert.Greater(t, second.token, first.token, "requeued after reconnecting: a new term")
	stop()
	<-terms
	assert.ErrorIs(t, <-runErr, context.Canceled)
	conn := raw(t, c)
	require.Eventually(t, func() bool { return len(children(t, conn, testPath(t))) == 0 }, 20*time.Second, 10*time.Millisecond)
}

func TestElection_RunWithoutRequeueReturnsTheLossOrFnsResult(t *testing.T) {
	c := server(t)
	ctx := ctxT(t, 30*time.Second)
	cl := connect(t, c, nil, zr.WithLossPolicy(zr.LoseOnLost))
	e := zr.NewElection(cl.Session, testPath(t))
	boom := errors.New("boom")
	assert.ErrorIs(t, e.Run(ctx, func(context.Context, *zr.Lease) error { return boom }), boom)
	assert.NoError(t, e.Run(ctx, func(context.Context, *zr.Lease) error { return nil }))
	leading := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- e.Run(ctx, func(fctx context.Context, l *zr.Lease) error {
			close(leading)
			<-fctx.Done()
			return nil
		})
	}()
	<-leading
	cl.expire(t)
	err := <-res
	assert.ErrorIs(t, err, zr.ErrLockLost)
	assert.ErrorIs(t, err, zr.ErrSessionExpired)
}

// Under LoseOnLost leadership survives a short connection loss, and is
// checked again on RECONNECTED: the participant reads its node back.
func TestElection_ReverifiesAfterReconnected(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	var reads atomic.Int64
	var watching atomic.Pointer[string]
	tracer := zr.TracerFunc(func(ev zr.TraceEvent) {
		if p := watching.Load(); p != nil && ev.Op == "getData" && ev.Path == *p && ev.Err == nil {
			reads.Add(1)
		}
	})
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithLossPolicy(zr.LoseOnLost), zr.WithSessionTimeout(8*time.Second), zr.WithTracer(tracer))
	ctx := ctxT(t, time.Minute)
	l, err := zr.NewElection(cl.Session, testPath(t)).Campaign(ctx)
	require.NoError(t, err)
	p := zkPath(cl.Session, l.Path())
	watching.Store(&p)
	st := watchStates(t, cl.Session)
	proxy.Blackhole()
	st.next(t, 10*time.Second, zr.StateSuspended)
	assert.NoError(t, l.Err(), "LoseOnLost keeps leadership through SUSPENDED")
	proxy.Heal()
	st.next(t, 10*time.Second, zr.StateReconnected)
	require.Eventually(t, func() bool { return reads.Load() >= 1 }, 10*time.Second, 5*time.Millisecond,
		"the leader reads its node back after RECONNECTED")
	assert.NoError(t, l.Err(), "still the leader: its node is there and its own")

	// Now the node goes while the connection is down: leadership ends.
	conn := raw(t, c)
	proxy.Blackhole()
	st.next(t, 10*time.Second, zr.StateSuspended)
	require.NoError(t, conn.Delete(p, -1))
	proxy.Heal()
	select {
	case <-l.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("leadership not ended after its node was deleted during the outage")
	}
	assert.ErrorIs(t, l.Err(), zr.ErrNodeDeleted)
}

func TestElection_ObserveReportsEachChangeOfLeader(t *testing.T) {
	for _, layout := range layouts {
		t.Run(layout.String(), func(t *testing.T) {
			c := server(t)
			path := testPath(t)
			ctx := ctxT(t, 30*time.Second)
			watcher := zr.NewElection(connect(t, c, nil).Session, path, zr.WithLayout(layout))
			octx, stop := context.WithCancel(ctx)
			ch, err := watcher.Subscribe(octx)
			require.NoError(t, err)
			next := func() zr.LeaderChange {
				select {
				case c, ok := <-ch:
					require.True(t, ok, "observe channel closed early")
					return c
				case <-time.After(15 * time.Second):
					t.Fatal("no leader change observed")
				}
				return zr.LeaderChange{}
			}
			assert.False(t, next().HasLeader, "nobody campaigns yet")

			a := zr.NewElection(connect(t, c, nil).Session, path, zr.WithLayout(layout), zr.WithParticipantID("a"))
			b := zr.NewElection(connect(t, c, nil).Session, path, zr.WithLayout(layout), zr.WithParticipantID("b"))
			la, err := a.Campaign(ctx)
			require.NoError(t, err)
			ch1 := next()
			require.True(t, ch1.HasLeader)
			assert.Equal(t, "a", string(ch1.Leader.Data))
			assert.Equal(t, la.Token(), ch1.Leader.Token)

			gotB := campaignBehind(t, ctx, b, 2)
			require.NoError(t, a.Resign(ctx))
			ch2 := next()
			assert.Equal(t, "b", string(ch2.Leader.Data), "a follower joining is no change; the resign is")
			(<-gotB).lease(t)
			require.NoError(t, b.Resign(ctx))
			assert.False(t, next().HasLeader)
			stop()
			for range ch {
				// drain until closed
			}
		})
	}
}

func TestElection_CampaignCancelledLeavesNoNode(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	a := zr.NewElection(connect(t, c, nil).Session, path)
	_, err := a.Campaign(ctx)
	require.NoError(t, err)
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = zr.NewElection(connect(t, c, nil).Session, path).Campaign(dctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, a.Resign(ctx))
}

func TestElection_LatchOnALockPathIsARecipeConflict(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	cl := connect(t, c, nil)
	l, err := zr.NewMutex(cl.Session, path).Acquire(ctx)
	require.NoError(t, err)
	_, err = zr.NewElection(cl.Session, path).Campaign(ctx)
	require.ErrorIs(t, err, zr.ErrRecipeConflict)
	assert.True(t, strings.Contains(err.Error(), "mutex"), err.Error())
	// The selector layout is a mutex on the path, as in Curator: it queues.
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = zr.NewElection(cl.Session, path, zr.WithLayout(zr.SelectorLayout)).Campaign(sctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, l.Release(ctx))
}

// An observer creates a missing election path to watch it, and deletes it
// again on the way out when nobody campaigned: no node is left behind.
func TestElection_ObserveLeavesNoPathBehind(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	octx, stop := context.WithCancel(ctx)
	ch, err := zr.NewElection(connect(t, c, nil).Session, path).Subscribe(octx)
	require.NoError(t, err)
	first := <-ch
	assert.False(t, first.HasLeader)
	ok, _, err := conn.Exists(path)
	require.NoError(t, err)
	assert.True(t, ok, "the observer watches the path it created")
	stop()
	for range ch {
		// drain until closed
	}
	ok, _, err = conn.Exists(path)
	require.NoError(t, err)
	assert.False(t, ok, "and deletes it when done")
}

// The same when the observer ends because its Session is closed.
func TestElection_ObserveLeavesNoPathBehindWhenTheSessionCloses(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	cl := connect(t, c, nil)
	ch, err := zr.NewElection(cl.Session, path).Subscribe(ctx)
	require.NoError(t, err)
	<-ch
	ok, _, err := conn.Exists(path)
	require.NoError(t, err)
	require.True(t, ok, "the observer watches the path it created")
	require.NoError(t, cl.Close())
	for range ch {
		// closed by Close
	}
	ok, _, err = conn.Exists(path)
	require.NoError(t, err)
	assert.False(t, ok, "Close deletes the path the observer created")
}

// campaigned is the outcome of a Campaign run in the background.
type campaigned struct {
	l   *zr.Lease
	err error
}

// lease asserts, on the test's goroutine, that the campaign won.
func (c campaigned) lease(t *testing.T) *zr.Lease {
	t.Helper()
	require.NoError(t, c.err)
	require.NotNil(t, c.l)
	return c.l
}

// campaignBehind starts e's Campaign in the background and returns once
// the election has n participants, e's among them; the outcome arrives on
// the channel. The goroutine asserts nothing: the test does, on its own.
func campaignBehind(t *testing.T, ctx context.Context, e *zr.Election, n int) <-chan campaigned {
	t.Helper()
	got := make(chan campaigned, 1)
	go func() {
		l, err := e.Campaign(ctx)
		got <- campaigned{l, err}
	}()
	require.Eventually(t, func() bool { ps, _ := e.Participants(ctx); return len(ps) == n }, 10*time.Second, 5*time.Millisecond)
	return got
}
