package zkrecipes

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connCutter dials plain connections and can close the last one, as a
// server or a network that drops it would.
type connCutter struct {
	mu   sync.Mutex
	last net.Conn
}

func (c *connCutter) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout(network, address, timeout)
	if err == nil {
		c.mu.Lock()
		c.last = conn
		c.mu.Unlock()
	}
	return conn, err
}

func (c *connCutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.last.Close()
}

// Campaign confirms a leadership with a read of its node, a round trip in
// which the connection can drop. When the Session has ended the lease by
// the time that read returns (LoseOnSuspended), the participant does not
// lead: Campaign must not declare it. Declared, the lease is born lost,
// with a token below that of the next leader, who may be granted before
// its holder so much as looks at it (issue 29, item 11). The campaign
// starts over and leads again on a new node. The seam holds Campaign
// between the confirmation and its return while the connection drops:
// the order is the seam's, not a timer's; a few rounds (each waits for a
// reconnection, about a second) make sure the campaign starts over each
// time.
func TestZKCampaignNeverDeclaresALeadershipLostWhileItWasConfirmed(t *testing.T) {
	for round := range 5 {
		cutter := &connCutter{}
		ctx, s := zkSession(t, 30*time.Second, WithDialer(cutter.dial))
		dir := "/zkt/confirm-lost-" + newUUID()
		reached, proceed := make(chan *hold, 1), make(chan struct{})
		var once sync.Once
		e := NewElection(s, dir)
		e.afterConfirm = func(h *hold) {
			once.Do(func() {
				reached <- h
				<-proceed
			})
		}
		type result struct {
			l   *Lease
			err error
		}
		out := make(chan result, 1)
		go func() {
			l, err := e.Campaign(ctx)
			out <- result{l, err}
		}()
		var h *hold
		select {
		case h = <-reached:
		case <-ctx.Done():
			require.FailNow(t, "Campaign never confirmed a leadership")
		}
		cutter.cut()
		require.Eventually(t, h.sig.fired, 10*time.Second, time.Millisecond, "the drop never ended the lease")
		close(proceed)
		r := <-out
		require.NoError(t, r.err)
		assert.NoError(t, r.l.Err(), "round %d: Campaign declared a leadership it had already lost", round)
		assert.Greater(t, r.l.Token(), h.token, "round %d: the leadership declared is a new one", round)
		_ = r.l.Release(ctx)
		_ = s.Close()
		if t.Failed() {
			return
		}
	}
}
