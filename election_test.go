package zkrecipes

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestElectionBadInputFailsEveryMethodWithoutIO(t *testing.T) {
	ctx := context.Background()
	s := &Session{} // never dialled: every check fails before any ZooKeeper call
	fn := func(context.Context, *Lease) error { return nil }
	for name, tc := range map[string]struct {
		e    *Election
		want error
	}{
		"nil session":  {NewElection(nil, "/e"), ErrNilSession},
		"bad path":     {NewElection(s, "e/"), ErrInvalidPath},
		"nil option":   {NewElection(s, "/e", nil), ErrInvalidArgument},
		"bad layout":   {NewElection(s, "/e", WithLayout(ElectionLayout(7))), ErrInvalidArgument},
		"reserved zk":  {NewElection(s, "/zookeeper/e"), ErrInvalidPath},
		"root as path": {NewElection(s, "/"), ErrInvalidPath},
	} {
		_, err := tc.e.Campaign(ctx)
		assert.ErrorIs(t, err, tc.want, name)
		assert.ErrorIs(t, tc.e.Resign(ctx), tc.want, name)
		_, err = tc.e.Leader(ctx)
		assert.ErrorIs(t, err, tc.want, name)
		_, err = tc.e.Participants(ctx)
		assert.ErrorIs(t, err, tc.want, name)
		_, err = tc.e.Subscribe(ctx)
		assert.ErrorIs(t, err, tc.want, name)
		assert.ErrorIs(t, tc.e.Run(ctx, fn), tc.want, name)
	}
}

func TestElectionNilArgumentsAreInvalid(t *testing.T) {
	e := NewElection(&Session{}, "/e")
	var nilCtx context.Context
	_, err := e.Campaign(nilCtx)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, err = e.Subscribe(nilCtx)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.ErrorIs(t, e.Run(context.Background(), nil), ErrInvalidArgument)
	assert.ErrorIs(t, e.Run(context.Background(), func(context.Context, *Lease) error { return nil }, nil), ErrInvalidArgument)
}

func TestElectionLayoutsMatchCuratorNodeNames(t *testing.T) {
	s := &Session{}
	latch := NewElection(s, "/e", WithParticipantID("p1"))
	require.NoError(t, latch.err)
	assert.Equal(t, "latch-", latch.q.name)
	assert.Equal(t, kindLatch, latch.q.kind)
	assert.Equal(t, "p1", latch.ID())
	assert.True(t, latch.q.noMark, "Curator's LeaderLatch stops watching on a data change: no grant mark")
	sel := NewElection(s, "/e", WithLayout(SelectorLayout))
	require.NoError(t, sel.err)
	assert.Equal(t, "lock-", sel.q.name)
	assert.Equal(t, kindMutex, sel.q.kind, "a selector is a mutex on the path, as in Curator")
	assert.False(t, sel.q.noMark)
	assert.True(t, strings.HasSuffix(sel.ID(), "-"+itoa(int64(osGetpid()))), "default id is host-pid: %s", sel.ID())
	assert.Equal(t, "LatchLayout", LatchLayout.String())
	assert.Equal(t, "ElectionLayout(9)", ElectionLayout(9).String())
}

func TestLatchNodesSortBySequenceAndConflictWithLocks(t *testing.T) {
	curator := "_c_0f1e2d3c-aaaa-4bbb-8ccc-123456789abc-latch-0000000004"
	ours := "_c_11111111-2222-4333-8444-555555555555-latch-0000000002"
	nodes := sortNodes([]string{curator, ours}, latchMarkers)
	assert.Equal(t, []string{ours, curator}, names(nodes))
	assert.True(t, allSequential(nodes), "latch nodes allow the fast handoff")
	assert.Equal(t, kindLatch, nodeKind(curator))
	assert.Equal(t, kindMutex, conflictingKind(sortNodes([]string{curator, "_c_x-lock-0000000009"}, latchMarkers), kindLatch))
	held, watch := maxLeasesPredicate(1)(nodes, 1)
	assert.False(t, held)
	assert.Equal(t, 0, watch, "the second in line watches the leader")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

var osGetpid = os.Getpid
