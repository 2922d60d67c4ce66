package recipes_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// A Mutex lease's token is the zxid that fences it: under contention,
// with other writes going on beside the queue, the tokens rise in the
// order the lease was granted, and (on the wire layer, which takes it
// from the create's reply rather than from a read of the node) each one
// is its node's czxid. Standalone and on a 3-server ensemble, sessions
// spread over its servers.
func TestMutex_TokenIsItsNodesCzxidAndRisesInGrantOrderUnderContention(t *testing.T) {
	t.Run("standalone", func(t *testing.T) { tokensUnderContention(t, server(t)) })
	t.Run("ensemble", func(t *testing.T) {
		server(t) // the suite's backend must be available
		ens := zktest.Start(t, zktest.WithSize(3))
		ctx := ctxT(t, time.Minute)
		_, err := ens.WaitLeader(ctx)
		require.NoError(t, err)
		tokensUnderContention(t, ens)
	})
}

func tokensUnderContention(t *testing.T, c *zktest.Cluster) {
	const sessions, rounds = 6, 12
	ctx := ctxT(t, time.Minute)
	path := testPath(t)
	obs := raw(t, c)

	// Other writes beside the queue, so that zxids move between any two
	// of the queue's own.
	churn := raw(t, c)
	stop := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p, err := churn.Create(path+"-churn", nil, zk.FlagEphemeral, worldACL())
			if err == nil {
				_ = churn.Delete(p, -1)
			}
		}
	}()
	defer func() { close(stop); <-churned }()

	var mu sync.Mutex // taken only while holding the lock: grant order
	var tokens []int64
	var mismatches []string
	var unread []string // held nodes the observer could not read
	servers := c.Servers()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		cl := connect(t, c, []string{servers[i%len(servers)]})
		m := zr.NewMutex(cl.Session, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				l, err := m.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				// The observer's server may lag the holder's: sync it first.
				node := zkPath(cl.Session, l.Path())
				_, serr := obs.Sync(node)
				ok, st, err := obs.Exists(node)
				mu.Lock()
				tokens = append(tokens, l.Token())
				switch {
				case wireOff():
				case serr != nil || err != nil || !ok:
					unread = append(unread, fmt.Sprintf("%s: sync %v, exists %v %v", l.Path(), serr, ok, err))
				case st.Czxid != l.Token():
					mismatches = append(mismatches, l.Path())
				}
				mu.Unlock()
				if err := l.Release(context.Background()); err != nil {
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
	require.Len(t, tokens, sessions*rounds)
	for i := 1; i < len(tokens); i++ {
		assert.Greater(t, tokens[i], tokens[i-1], "grant %d's token is above the one before", i)
	}
	assert.Empty(t, unread, "held nodes the observer could not read, so their token went unchecked")
	assert.Empty(t, mismatches, "leases whose token is not their node's czxid")
}
