//go:build linux

package robustness_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/internal/fleet"
	"github.com/zkrecipes/zkrecipes/integration/robustness"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The overlap of issue 29 (item 11), replayed in order: a leader whose
// Campaign has returned is paused before it logs its ACQUIRED line (a busy
// machine), its session expires meanwhile (a real server-side expiry, the
// suite's expire-session fault), the next participant in line leads and
// logs first, with a higher token, and only then does the paused leader log
// its lease, whose Done reports the loss right after. On the server the two
// leaderships never overlapped: the first one's node was gone before the
// second one was granted, which is what the lower token of the lease logged
// last proves. The checks must accept that log, as they must reject the
// same log with the late lease released instead of lost (model_test.go,
// chaos's checker_test.go).
func TestChecksAcceptALeadershipLoggedAfterItsSuccessorsWhenItReportsItsLoss(t *testing.T) {
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "shared.log")
	lg, err := chaos.OpenLog(logPath)
	require.NoError(t, err)
	defer lg.Close()
	store, err := chaos.StartStore()
	require.NoError(t, err)
	defer store.Close()
	path := "/late-report/election"
	connect := func(actor string) (*zr.Session, string) {
		file := filepath.Join(dir, actor[:2]+".election")
		s, closeSession, err := fleet.Connect(ctx, srv.Servers(), sessionTimeout, lg, actor, file)
		require.NoError(t, err)
		t.Cleanup(closeSession)
		return s, file
	}
	campaign := func(s *zr.Session, actor string) <-chan *zr.Lease {
		lg.Add(robustness.Call, actor, "acquire")
		out := make(chan *zr.Lease, 1)
		go func() {
			l, err := zr.NewElection(s, path, zr.WithParticipantID(actor)).Campaign(ctx)
			if err != nil {
				l = nil
			}
			out <- l
		}()
		return out
	}
	lease := func(ch <-chan *zr.Lease) *zr.Lease {
		select {
		case l := <-ch:
			require.NotNil(t, l, "the campaign failed")
			return l
		case <-ctx.Done():
			require.FailNow(t, "no leadership before the deadline")
			return nil
		}
	}
	participants := func(s *zr.Session, n int) {
		require.Eventually(t, func() bool {
			ps, err := zr.NewElection(s, path).Participants(ctx)
			return err == nil && len(ps) == n
		}, 20*time.Second, 10*time.Millisecond)
	}

	s1, _ := connect("p1/election")
	l1 := lease(campaign(s1, "p1/election"))
	s2, file2 := connect("p2/election")
	ch2 := campaign(s2, "p2/election")
	participants(s1, 2)
	s4, _ := connect("p4/election")
	ch4 := campaign(s4, "p4/election")
	participants(s1, 3)

	h1 := fleet.Hold(lg, "p1/election", l1)
	require.NoError(t, h1.Release(ctx, "release"))
	l2 := lease(ch2) // p2 leads; its process is paused before it logs it
	id, pw, err := fleet.ReadSession(file2)
	require.NoError(t, err)
	require.NoError(t, zktest.ExpireSession(ctx, srv.Servers()[0], id, pw))
	l4 := lease(ch4)
	h4 := fleet.Hold(lg, "p4/election", l4)
	fence := func(actor string) fleet.Fence {
		return fleet.Fence{Log: lg, HTTP: &http.Client{Timeout: time.Second}, Addr: store.Addr(), Actor: actor}
	}
	lg.Add(robustness.Call, "p4/election", "write", h4.Token())
	assert.Equal(t, "accepted", fence("p4/election").Write(h4.Token()))

	// p2 runs again: it logs its lease, sees it lost before any write, and
	// stops (as the suite's client does).
	h2 := fleet.Hold(lg, "p2/election", l2)
	select {
	case <-l2.Done():
	case <-ctx.Done():
		require.FailNow(t, "p2's lease never reported the expiry of its session")
	}
	require.ErrorIs(t, l2.Err(), zr.ErrLockLost)
	_ = h2.Release(ctx, "lost")
	require.NoError(t, h4.Release(ctx, "release"))
	require.Less(t, l2.Token(), l4.Token(), "the lease logged last has the lower token: this test must exercise that case")

	events, err := chaos.ParseFile(logPath)
	require.NoError(t, err)
	evs := robustness.ForWorkload(events, "election")
	rep := chaos.Check(evs)
	assert.Empty(t, rep.Violations, "the overlap check")
	assert.Equal(t, 1, rep.LateReports, "one lease logged after its successor's")
	res := robustness.Check("election", robustness.LockModel, robustness.LockOperations(evs), 10*time.Second, "")
	assert.Equal(t, string(porcupine.Ok), res.Verdict, "the lock model")
	if t.Failed() {
		b, _ := os.ReadFile(logPath)
		t.Logf("the log:\n%s", b)
	}
}
