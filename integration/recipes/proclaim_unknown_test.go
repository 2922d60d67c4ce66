package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A leader whose Proclaim write reached the server while its reply was
// lost, and whose term then ended with the suspension (LoseOnSuspended),
// must not be told only "not the leader", which says the data was never
// published: the error also says the outcome is unknown (it matches
// ErrOutcomeUnknown and zk.ErrConnectionClosed, as every write whose reply
// was lost does). When
// the reply lost is the read before the write, no write was sent: plain
// ErrNotLeader. Found by the reply-fault sweep (Election.Proclaim,
// lose-suspended-2).
//
// 20 rounds, on 4 Sessions at once (a reconnection costs go-zookeeper
// about a second), with the hold before the reset varied. Each round
// watches the leader's node from outside to see whether the write landed
// (the k-th reply is counted from the round's start, and a request the
// library sends in the background may take a place: the watch, not k,
// tells what happened).
func TestElection_ProclaimWhoseWriteReplyIsLostAsTheTermEndsSaysTheOutcomeIsUnknown(t *testing.T) {
	c := server(t)
	obs := raw(t, c)
	const lanes, rounds = 4, 5
	type lane struct {
		p    *zktest.Proxy
		s    *client
		path string
	}
	ls := make([]lane, lanes)
	for i := range ls {
		p := zktest.NewProxy(t, c.Servers()[0])
		ls[i] = lane{p: p, s: connect(t, c, []string{p.Addr()}), path: fmt.Sprintf("%s/%d", testPath(t), i)} // LoseOnSuspended, the default
	}
	var mu sync.Mutex
	var problems []string
	written := 0
	var wg sync.WaitGroup
	for li, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				i := li*rounds + r
				w, problem := proclaimRound(obs, l.p, l.s, l.path, i)
				mu.Lock()
				if w {
					written++
				}
				if problem != "" {
					problems = append(problems, fmt.Sprintf("round %d: %s", i, problem))
				}
				mu.Unlock()
				if problem != "" {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Empty(t, problems)
	require.GreaterOrEqual(t, written, lanes*rounds/4, "too few rounds lost the reply of a write that landed")
}

// proclaimRound campaigns, loses the k-th reply of a Proclaim and checks
// its error against what the leader's node saw. It reports whether the
// write landed, and what went wrong.
func proclaimRound(obs *zk.Conn, p *zktest.Proxy, s *client, path string, i int) (written bool, problem string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := zr.NewElection(s.Session, path, zr.WithParticipantID("leader"), zr.WithProclaim(true))
	lease, err := e.Campaign(ctx)
	if err != nil {
		return false, fmt.Sprintf("campaign: %v", err)
	}
	kids, _, err := obs.Children(path)
	if err != nil || len(kids) != 1 {
		return false, fmt.Sprintf("leader's nodes %v (%v)", kids, err)
	}
	_, _, watch, err := obs.GetW(path + "/" + kids[0])
	if err != nil {
		return false, fmt.Sprintf("watch: %v", err)
	}
	// Flush: every earlier reply is in before the count starts.
	if _, _, err := s.Conn().Exists("/"); err != nil {
		return false, fmt.Sprintf("flush: %v", err)
	}
	k := 1 + i%2 // 1: the read before the write; 2: the write
	f := p.LoseRequestReply(k, time.Duration(20+5*i)*time.Millisecond)
	err = e.Proclaim(ctx, lease, []byte("proclaimed"))
	select {
	case <-f.Hit():
	default:
		return false, "the fault took no reply"
	}
	var ev zk.Event
	select {
	case ev = <-watch:
	case <-ctx.Done():
		return false, "no event on the leader's node"
	}
	if !errors.Is(err, zr.ErrNotLeader) {
		return false, fmt.Sprintf("want ErrNotLeader, got %v", err)
	}
	written = ev.Type == zk.EventNodeDataChanged
	switch unknown := errors.Is(err, zr.ErrOutcomeUnknown) && errors.Is(err, zk.ErrConnectionClosed); {
	case written && !unknown:
		return true, fmt.Sprintf("the data was written, but the error says %q", err)
	case !written && k == 1 && unknown:
		return false, fmt.Sprintf("the read's reply was lost, no write was sent, but the error says %q", err)
	}
	// The term is over: wait for the node to go before the next round.
	for end := time.Now().Add(10 * time.Second); ; {
		if kids, _, err := obs.Children(path); err == nil && len(kids) == 0 {
			return written, ""
		}
		if time.Now().After(end) {
			return written, "the leader's node stayed after the term ended"
		}
		time.Sleep(20 * time.Millisecond)
	}
}
