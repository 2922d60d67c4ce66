package recipes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// A leader whose Proclaim write reached the server while its reply was
// lost, and whose term then ended with the suspension (LoseOnSuspended),
// must not be told only "not the leader", which says the data was never
// published: the error also says the outcome is unknown (it matches
// zk.ErrConnectionClosed, as every write whose reply was lost does). When
// the reply lost is the read before the write, no write was sent: plain
// ErrNotLeader. Found by the reply-fault sweep (Election.Proclaim,
// lose-suspended-2). Each round watches the leader's node from outside to
// see whether the write landed.
func TestElection_ProclaimWhoseWriteReplyIsLostAsTheTermEndsSaysTheOutcomeIsUnknown(t *testing.T) {
	c := server(t)
	p := zktest.NewProxy(t, c.Servers()[0])
	s := connect(t, c, []string{p.Addr()}) // LoseOnSuspended, the default
	obs := raw(t, c)
	path := testPath(t)
	const rounds = 20
	for i := 0; i < rounds; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		e := zr.NewElection(s.Session, path, zr.WithParticipantID("leader"), zr.WithProclaim())
		lease, err := e.Campaign(ctx)
		require.NoError(t, err, "round %d", i)
		kids := children(t, obs, path)
		require.Len(t, kids, 1, "round %d", i)
		_, _, watch, err := obs.GetW(path + "/" + kids[0])
		require.NoError(t, err)
		// Flush: every earlier reply is in before the count starts.
		_, _, err = s.Conn().Exists("/")
		require.NoError(t, err)

		k := 1 + i%2 // 1: the read before the write; 2: the write
		hold := time.Duration(50+10*i) * time.Millisecond
		f := p.LoseRequestReply(k, hold)
		err = e.Proclaim(ctx, lease, []byte("proclaimed"))
		require.True(t, closedWithin(f.Hit(), time.Second), "round %d: the fault took no reply", i)
		var ev zk.Event
		select {
		case ev = <-watch:
		case <-ctx.Done():
			t.Fatalf("round %d: no event on the leader's node", i)
		}
		written := ev.Type == zk.EventNodeDataChanged
		require.Equal(t, k == 2, written, "round %d: k=%d, event %v", i, k, ev.Type)
		require.ErrorIs(t, err, zr.ErrNotLeader, "round %d", i)
		require.Equal(t, written, errors.Is(err, zk.ErrConnectionClosed),
			"round %d: written=%v, but the error says %q", i, written, err)
		// The term is over; wait for the node to go before the next round.
		require.Eventually(t, func() bool { return len(children(t, obs, path)) == 0 }, 10*time.Second, 20*time.Millisecond)
		cancel()
	}
}

func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}
