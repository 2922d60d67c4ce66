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
	var bm backlogMark
	tc := &TreeCache{s: s, path: "/c", cfg: treeConfig{kind: KindTreeCache}}
	nc := &NodeCache{s: s, path: "/n"}
	var cs cacheSyncs
	l := &Lease{h: h}
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
		s.reportCacheSync(KindTreeCache, "", "/c", true, 1, 0)
		s.noteBacklog(&bm, KindTreeCache, "", "/c", 1000)
		tc.noteBacklog()
		nc.noteBacklog()
		nc.reportRead(&cs, nodeData{})
		q.reportReentry(ctx, false, l)
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
	require.Equal(t, RecipeInfo{Kind: KindMutex, Name: "mine", Path: "/l/1"}, s.recipeInfo(KindMutex, "mine", "/l/1"))
	require.Equal(t, RecipeInfo{Kind: KindMutex, Name: "by-path", Path: "/l/1"}, s.recipeInfo(KindMutex, "", "/l/1"))
}

// backlogRecorder records the backlogs an Observer is told of.
type backlogRecorder struct {
	BaseObserver
	got []int
}

func (r *backlogRecorder) CacheBacklog(ev CacheBacklogEvent) { r.got = append(r.got, ev.Backlog) }

// A cache's backlog is reported when it crosses a power of two from 32 up
// or down, and as 0 once drained after that; a backlog that stays small
// reports nothing.
func TestCacheBacklogIsReportedAtPowersOfTwoAndWhenDrained(t *testing.T) {
	rec := &backlogRecorder{}
	s := &Session{cfg: defaultSessionConfig()}
	s.cfg.obs = rec
	var m backlogMark
	for _, n := range []int{1, 0, 5, 31, 32, 40, 63, 64, 200, 64, 63, 31, 10, 0, 0, 3} {
		s.noteBacklog(&m, KindTreeCache, "", "/c", n)
	}
	require.Equal(t, []int{32, 64, 200, 64, 63, 31, 0}, rec.got)
}
