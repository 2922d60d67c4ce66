package zkrecipes

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hooks on an acquisition's and a release's path cost no allocation on
// a Session without an Observer.
func TestObserverHooksWithoutObserverAllocateNothing(t *testing.T) {
	s := &Session{cfg: defaultSessionConfig()}
	q := &queue{s: s, obs: observed{KindMutex, "orders"}}
	h := &hold{s: s}
	ctx := context.Background()
	nodes := []queueNode{{name: "_c_x-lock-0000000001"}}
	ch := StateChange{State: StateConnected}
	allocs := testing.AllocsPerRun(1000, func() {
		if q.s.cfg.obs != nil && q.obs.kind != "" { // queue.acquire's hook
			t.Fatal("observed without an observer")
		}
		s.notePosition(ctx, true, nodes, "_c_x-lock-0000000001")
		s.noteAttempt(ctx)
		h.reportEnd(ctx, h.obs, ErrReleased)
		s.reportState(ch)
		s.reportCacheSync("/c", true, 1, 0)
	})
	require.Zero(t, allocs)
}

// A lease's end is classified by the cause its Err matches.
func TestEndCauseNamesTheLossCause(t *testing.T) {
	for _, c := range []struct {
		err  error
		want EndCause
	}{
		{ErrReleased, EndReleased},
		{lost(ErrSuspended), EndSuspended},
		{lost(ErrSessionExpired), EndExpired},
		{lost(fmt.Errorf("%w: disconnected for the whole session timeout", ErrSessionExpired)), EndExpired},
		{lost(ErrSessionChanged), EndSessionChanged},
		{lost(ErrNodeDeleted), EndDeleted},
		{lost(ErrLeaseExpired), EndLeaseTime},
		{lost(ErrClosed), EndClosed},
		{fmt.Errorf("boom"), EndOther},
	} {
		require.Equal(t, c.want, endCause(c.err), "%v", c.err)
	}
}

// A Session option rejects a nil observer or naming function.
func TestObserverOptionsRejectNil(t *testing.T) {
	_, err := buildConfig([]SessionOption{WithObserver(nil)})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = buildConfig([]SessionOption{WithPathNames(nil)})
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// A recipe's own name wins over the Session's naming function, which names
// the rest.
func TestRecipeInfoNamesByOptionThenPathFunction(t *testing.T) {
	s := &Session{cfg: defaultSessionConfig()}
	s.cfg.names = func(p string) string { return "by-path" }
	require.Equal(t, RecipeInfo{Kind: KindMutex, Name: "mine", Path: "/l/1"}, s.RecipeInfo(KindMutex, "mine", "/l/1"))
	require.Equal(t, RecipeInfo{Kind: KindMutex, Name: "by-path", Path: "/l/1"}, s.RecipeInfo(KindMutex, "", "/l/1"))
}
