package zkrecipes

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nextLeaderData reads ch until it reports a leader whose data is want,
// returning the data of every change read on the way.
func nextLeaderData(t *testing.T, ctx context.Context, ch <-chan LeaderChange, want string) []string {
	t.Helper()
	var seen []string
	for {
		select {
		case c, ok := <-ch:
			require.True(t, ok, "Observe ended early; saw %q", seen)
			seen = append(seen, string(c.Leader.Data))
			if c.HasLeader && bytes.Equal(c.Leader.Data, []byte(want)) {
				return seen
			}
		case <-ctx.Done():
			require.FailNow(t, "no leader with data "+want, "saw %q", seen)
		}
	}
}

func TestZKElectionProclaimIsSeenByObserversAndTheNextLeaderStillTakesOver(t *testing.T) {
	for _, layout := range []ElectionLayout{LatchLayout, SelectorLayout} {
		t.Run(layout.String(), func(t *testing.T) {
			ctx, s1 := zkSession(t, 30*time.Second)
			_, s2 := zkSession(t, 30*time.Second)
			_, s3 := zkSession(t, 30*time.Second)
			path := "/zkt/proclaim-" + newUUID()
			leader := NewElection(s1, path, WithLayout(layout), WithParticipantID("one"), WithProclaim(true))
			next := NewElection(s3, path, WithLayout(layout), WithParticipantID("three"))
			watcher := NewElection(s2, path, WithLayout(layout))

			lease, err := leader.Campaign(ctx)
			require.NoError(t, err)
			octx, stop := context.WithCancel(ctx)
			defer stop()
			ch, err := watcher.Subscribe(octx)
			require.NoError(t, err)
			assert.Equal(t, []string{"one"}, nextLeaderData(t, ctx, ch, "one"))

			waiting := make(chan error, 1)
			var nextLease *Lease
			go func() {
				var err error
				nextLease, err = next.Campaign(ctx)
				waiting <- err
			}()
			require.Eventually(t, func() bool {
				ps, err := watcher.Participants(ctx)
				return err == nil && len(ps) == 2
			}, 10*time.Second, 10*time.Millisecond, "the second participant waits behind the leader")

			require.NoError(t, leader.Proclaim(ctx, lease, []byte("v2")))
			assert.Equal(t, []string{"v2"}, nextLeaderData(t, ctx, ch, "v2"), "each value once, in order")
			require.NoError(t, leader.Proclaim(ctx, lease, []byte("v3")))
			assert.Equal(t, []string{"v3"}, nextLeaderData(t, ctx, ch, "v3"))
			got, err := watcher.Leader(ctx)
			require.NoError(t, err)
			assert.Equal(t, "v3", string(got.Data))

			// A burst: the observer may skip values, never reorders them,
			// and ends on the last.
			for i := 4; i <= 12; i++ {
				require.NoError(t, leader.Proclaim(ctx, lease, []byte(fmt.Sprintf("v%d", i))))
			}
			burst := nextLeaderData(t, ctx, ch, "v12")
			for i := 1; i < len(burst); i++ {
				prev, _ := strconv.Atoi(strings.TrimPrefix(burst[i-1], "v"))
				cur, _ := strconv.Atoi(strings.TrimPrefix(burst[i], "v"))
				assert.Greater(t, cur, prev, "in order: %q", burst)
			}
			got, err = watcher.Leader(ctx)
			require.NoError(t, err)
			assert.Equal(t, "v12", string(got.Data))
			assert.Equal(t, baseName(lease.Path()), got.Node, "the same node, still leading")
			assert.NoError(t, lease.Err())

			// A data change on the leader's node does not stall the
			// participant waiting on it.
			require.NoError(t, leader.Resign(ctx))
			require.NoError(t, <-waiting)
			assert.Equal(t, []string{"three"}, nextLeaderData(t, ctx, ch, "three"))

			// The former leader's Proclaim fails and changes nothing.
			err = leader.Proclaim(ctx, lease, []byte("stale"))
			assert.ErrorIs(t, err, ErrNotLeader)
			assert.ErrorIs(t, err, ErrReleased)
			got, err = watcher.Leader(ctx)
			require.NoError(t, err)
			assert.Equal(t, "three", string(got.Data))
			require.NoError(t, nextLease.Release(ctx))
		})
	}
}

func TestZKElectionProclaimAfterTheNodeWasDeletedFailsAndEndsTheLease(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/proclaim-gone-" + newUUID()
	e := NewElection(s, path, WithParticipantID("p"), WithProclaim(true))
	lease, err := e.Campaign(ctx)
	require.NoError(t, err)
	node := s.abs(lease.Path())
	require.NoError(t, raw.Delete(node, -1))

	err = e.Proclaim(ctx, lease, []byte("x"))
	assert.ErrorIs(t, err, ErrNotLeader)
	assert.ErrorIs(t, err, ErrLockLost)
	assert.ErrorIs(t, err, ErrNodeDeleted)
	assert.ErrorIs(t, lease.Err(), ErrNodeDeleted, "the lease ends as lost")
	ok, _, err := raw.Exists(node)
	require.NoError(t, err)
	assert.False(t, ok, "nothing is re-created")
}

func TestZKElectionProclaimRejectsBadInputAndChangesNothing(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	path := "/zkt/proclaim-bad-" + newUUID()
	e := NewElection(s, path, WithParticipantID("p"), WithProclaim(true))
	other := NewElection(s, path+"-other")
	lease, err := e.Campaign(ctx)
	require.NoError(t, err)
	defer func() { _ = lease.Release(ctx) }()
	otherLease, err := other.Campaign(ctx)
	require.NoError(t, err)
	defer func() { _ = otherLease.Release(ctx) }()

	var nilCtx context.Context
	assert.ErrorIs(t, e.Proclaim(nilCtx, lease, nil), ErrInvalidArgument)
	assert.ErrorIs(t, e.Proclaim(ctx, nil, nil), ErrInvalidArgument)
	assert.ErrorIs(t, e.Proclaim(ctx, otherLease, []byte("x")), ErrInvalidArgument, "another election's lease")
	assert.ErrorIs(t, e.Proclaim(ctx, lease, []byte(strings.Repeat("x", 1<<20))), ErrDataTooLarge)
	got, err := e.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "p", string(got.Data))
	assert.NoError(t, lease.Err())

	// In LatchLayout, without WithProclaim, a Curator LeaderLatch could be
	// waiting behind: Proclaim refuses and changes nothing.
	assert.ErrorIs(t, other.Proclaim(ctx, otherLease, []byte("x")), ErrInvalidArgument, "LatchLayout without WithProclaim")
	got, err = other.Leader(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, "x", string(got.Data))
	assert.NoError(t, otherLease.Err())
}
