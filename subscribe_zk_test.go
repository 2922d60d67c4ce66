package zkrecipes

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awaitClosed reads ch until it is closed, within a generous bound.
func awaitClosed[T any](t *testing.T, what string, ch <-chan T) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("%s: channel not closed", what)
		}
	}
}

func TestZKSessionSubscribeChannelClosesWhenCtxEnds(t *testing.T) {
	_, s := zkSession(t, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Subscribe(ctx)
	require.NoError(t, err)
	cancel()
	awaitClosed(t, "Session.Subscribe after ctx ended", ch)
	assert.Equal(t, StateConnected, s.State(), "the Session lives on")
}

func TestZKSessionSubscribeChannelClosesWhenTheSessionCloses(t *testing.T) {
	_, s := zkSession(t, 30*time.Second)
	ch, err := s.Subscribe(context.Background())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	awaitClosed(t, "Session.Subscribe after the Session's Close", ch)
	var nilCtx context.Context
	_, err = s.Subscribe(nilCtx)
	assert.ErrorIs(t, err, ErrInvalidArgument)
}

// opaqueCtx is a ctx the context package cannot see into: an AfterFunc
// on it waits on a goroutine of its own until it ends or is stopped.
type opaqueCtx struct{ context.Context }

func (opaqueCtx) Value(any) any { return nil }

func TestZKSessionSubscribeLeavesNoGoroutineOnceTheSessionClosesWhileCtxLives(t *testing.T) {
	_, s := zkSession(t, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := runtime.NumGoroutine()
	const n = 50
	chans := make([]<-chan StateChange, n)
	for i := range chans {
		ch, err := s.Subscribe(opaqueCtx{ctx})
		require.NoError(t, err)
		chans[i] = ch
	}
	require.NoError(t, s.Close())
	for _, ch := range chans {
		awaitClosed(t, "Session.Subscribe after the Session's Close", ch)
	}
	// The Session's own goroutines end with it too: base is an upper bound.
	if !assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= base }, 20*time.Second, 10*time.Millisecond) {
		buf := make([]byte, 1<<20)
		t.Logf("goroutines: %d before, %d after:\n%s", base, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

func TestZKElectionSubscribeClosesWhenCtxEndsAndObserveIsItsAlias(t *testing.T) {
	_, s := zkSession(t, 30*time.Second)
	e := NewElection(s, "/zkt/subscribe-"+newUUID())
	for name, sub := range map[string]func(context.Context) (<-chan LeaderChange, error){
		"Subscribe": e.Subscribe, "Observe": e.Observe,
	} {
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := sub(ctx)
		require.NoError(t, err, name)
		select {
		case first, ok := <-ch:
			require.True(t, ok, name)
			assert.False(t, first.HasLeader, "%s: first the current state: nobody campaigns", name)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no first state", name)
		}
		cancel()
		awaitClosed(t, "Election."+name+" after ctx ended", ch)
	}
}

func TestZKGroupMemberMembersChannelClosesAtTheNextChange(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	group := "/zkt/members-" + newUUID()
	a := NewGroupMember(s, group, "a", []byte("1"))
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	for {
		members, changed := a.Members()
		if _, ok := members["a"]; ok {
			break
		}
		<-changed
	}
	_, changed := a.Members()
	b := NewGroupMember(s, group, "b", []byte("2"))
	require.NoError(t, b.Start(ctx))
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("Members' channel not closed at the next change")
	}
	require.Eventually(t, func() bool {
		members, _ := a.Members()
		return string(members["b"]) == "2"
	}, 20*time.Second, 10*time.Millisecond)
}
