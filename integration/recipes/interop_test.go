package recipes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// shareLog is the shared log of an interop run, written in the peers'
// format (integration/peers/README.md): one write(2) per line on an
// O_APPEND file, "OP ID [TOKEN] UNIX_NANOS".
type shareLog struct {
	f *os.File
}

func openShareLog(t *testing.T) (*shareLog, string) {
	p := filepath.Join(t.TempDir(), "shared.log")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return &shareLog{f: f}, p
}

func (l *shareLog) line(op, id string, token ...string) error {
	fields := append([]string{op, id}, token...)
	_, err := l.f.WriteString(strings.Join(fields, " ") + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
	return err
}

// seqOf is the sequence suffix of a lease's node, the token peers log.
func seqOf(l *zr.Lease) string { p := l.Path(); return p[len(p)-10:] }

// participant is a zkrecipes contender of an interop run: it acquires with
// acquire, logs enter, holds for hold, logs exit and releases, until
// its duration is over.
type participant struct {
	id      string
	enter   string // ENTER, RENTER or SENTER
	exit    string
	acquire func(ctx context.Context, s *zr.Session) (*zr.Lease, error)
}

// runParticipants runs ps, each on a Session of its own, for d; it returns
// the acquisitions per id.
func runParticipants(t *testing.T, log *shareLog, ps []participant, d, hold time.Duration) map[string]int {
	c := server(t)
	sessions := make([]*zr.Session, len(ps))
	for i := range ps {
		sessions[i] = connect(t, c, nil).Session
	}
	counts := make([]int, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				ctx, cancel := context.WithDeadline(context.Background(), end)
				l, err := p.acquire(ctx, sessions[i])
				cancel()
				if err != nil {
					if time.Now().Before(end) {
						errs[i] = err
					}
					return
				}
				counts[i]++
				if err := log.line(p.enter, p.id, seqOf(l)); err != nil {
					errs[i] = err
				}
				select {
				case <-l.Done():
					errs[i] = fmt.Errorf("%s lost its lease: %w", p.id, l.Err())
				case <-time.After(hold):
				}
				_ = log.line(p.exit, p.id)
				rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = l.Release(rctx)
				rcancel()
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	out := map[string]int{}
	for i, p := range ps {
		assert.NoError(t, errs[i], p.id)
		out[p.id] = counts[i]
	}
	return out
}

// startCurator starts a Curator peer on path for d, logging to logPath.
func startCurator(t *testing.T, mode, id, path, logPath string, d, hold time.Duration, extra ...string) *peers.Process {
	c := server(t)
	args := append([]string{mode, "--servers", c.ConnectString(), "--path", path, "--id", id,
		"--duration", d.String(), "--hold-ms", strconv.Itoa(int(hold / time.Millisecond)), "--log", logPath}, extra...)
	return peers.Start(t, peers.Curator, args...)
}

func waitPeers(t *testing.T, ps ...*peers.Process) []peers.Summary {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out []peers.Summary
	for _, p := range ps {
		s, err := p.Wait(ctx)
		require.NoError(t, err)
		out = append(out, s)
	}
	return out
}

func checkInterop(t *testing.T, logPath string, opts ...peers.CheckOption) peers.Report {
	rep, err := peers.CheckLog(logPath, opts...)
	require.NoError(t, err)
	shown := rep.Violations
	if len(shown) > 10 {
		shown = shown[:10]
	}
	assert.Empty(t, rep.Open, "holders never exited")
	assert.Empty(t, shown, "%d violations", len(rep.Violations))
	t.Logf("log: %d lines, acquisitions %v, max writers %d, readers %d, leases %d",
		rep.Lines, rep.Acquisitions, rep.MaxWriters, rep.MaxReaders, rep.MaxLeases)
	return rep
}

// waitJVMs waits until every Curator peer has logged a first line, so that
// the zkrecipes participants contend with running peers.
func waitFirstLines(t *testing.T, logPath string, ids ...string) {
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		for _, id := range ids {
			if !strings.Contains(string(b), " "+id+" ") {
				return false
			}
		}
		return true
	}, time.Minute, 10*time.Millisecond, "Curator peers %v never acquired", ids)
}

func TestInterop_ReadWriteLockWithCurator(t *testing.T) {
	path := testPath(t)
	log, logPath := openShareLog(t)
	const hold = 20 * time.Millisecond
	cw := startCurator(t, "write", "cw", path, logPath, 12*time.Second, hold)
	cr := startCurator(t, "read", "cr", path, logPath, 12*time.Second, hold)
	waitFirstLines(t, logPath, "cw", "cr")
	write := func(ctx context.Context, s *zr.Session) (*zr.Lease, error) {
		return zr.NewRWMutex(s, path).WriteLock().Acquire(ctx)
	}
	read := func(ctx context.Context, s *zr.Session) (*zr.Lease, error) {
		return zr.NewRWMutex(s, path).ReadLock().Acquire(ctx)
	}
	counts := runParticipants(t, log, []participant{
		{"zw1", "ENTER", "EXIT", write}, {"zw2", "ENTER", "EXIT", write},
		{"zr1", "RENTER", "REXIT", read}, {"zr2", "RENTER", "REXIT", read},
	}, 5*time.Second, hold)
	waitPeers(t, cw, cr)
	rep := checkInterop(t, logPath)
	for id, n := range counts {
		assert.Positive(t, n, id)
	}
	assert.Positive(t, rep.Acquisitions["cw"])
	assert.Positive(t, rep.Acquisitions["cr"])
	assert.Equal(t, 1, rep.MaxWriters)
	// Whether readers happen to overlap in this mixed run depends on
	// timing; TestInterop_ReadersShareWithCurator shows it for certain.
	t.Logf("at most %d readers inside at once", rep.MaxReaders)
}

// A zkrecipes reader gets in while a Curator reader holds the read lock,
// and a writer of either does not.
func TestInterop_ReadersShareWithCurator(t *testing.T) {
	c := server(t)
	path := testPath(t)
	_, logPath := openShareLog(t)
	const curatorHold = 4 * time.Second
	// Its duration bounds its connect too (a JVM on a busy machine can take
	// more than a second) and ends before its first hold does: one hold.
	cr := startCurator(t, "read", "cr", path, logPath, 3*time.Second, curatorHold)
	waitFirstLines(t, logPath, "cr") // the Curator reader holds, for curatorHold
	ctx := ctxT(t, curatorHold/2)
	rw := zr.NewRWMutex(connect(t, c, nil).Session, path)
	l, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err, "a zkrecipes reader gets in beside a Curator reader")
	_, err = zr.NewRWMutex(connect(t, c, nil).Session, path).WriteLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, zr.ErrLocked, "a writer does not")
	require.NoError(t, l.Release(ctx))
	waitPeers(t, cr)
}

// The zkrecipes downgrade (a non-sequential read node at the writer's
// place) keeps a waiting Curator 5.4 writer out.
func TestInterop_DowngradeKeepsCuratorWriterOut(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	log, logPath := openShareLog(t)
	ctx := ctxT(t, time.Minute)
	rw := zr.NewRWMutex(connect(t, c, nil).Session, path)
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, log.line("ENTER", "zw", seqOf(w)))
	cw := startCurator(t, "write", "cw", path, logPath, 6*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 2 }, time.Minute, 5*time.Millisecond,
		"the Curator writer queues")
	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, log.line("EXIT", "zw"))
	require.NoError(t, log.line("RENTER", "zw", seqOf(r)))
	require.NoError(t, w.Release(ctx))
	// Hold the downgraded read lock well past the Curator writer's wake-up.
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, log.line("REXIT", "zw"))
	require.NoError(t, r.Release(ctx))
	waitPeers(t, cw)
	rep := checkInterop(t, logPath)
	assert.Positive(t, rep.Acquisitions["cw"], "the Curator writer got in after the read release")
}

func TestInterop_SemaphoreWithCurator(t *testing.T) {
	path := testPath(t)
	log, logPath := openShareLog(t)
	const maxLeases, hold = 2, 10 * time.Millisecond
	max := []string{"--max", strconv.Itoa(maxLeases)}
	c1 := startCurator(t, "semaphore", "cs1", path, logPath, 12*time.Second, hold, max...)
	c2 := startCurator(t, "semaphore", "cs2", path, logPath, 12*time.Second, hold, max...)
	waitFirstLines(t, logPath, "cs1", "cs2")
	acq := func(ctx context.Context, s *zr.Session) (*zr.Lease, error) {
		ls, err := zr.NewSemaphore(s, path, maxLeases).Acquire(ctx, 1)
		if err != nil {
			return nil, err
		}
		return ls[0], nil
	}
	counts := runParticipants(t, log, []participant{
		{"zs1", "SENTER", "SEXIT", acq}, {"zs2", "SENTER", "SEXIT", acq}, {"zs3", "SENTER", "SEXIT", acq},
	}, 5*time.Second, hold)
	waitPeers(t, c1, c2)
	rep := checkInterop(t, logPath, peers.MaxLeases(maxLeases))
	for id, n := range counts {
		assert.Positive(t, n, id)
	}
	assert.Positive(t, rep.Acquisitions["cs1"])
	assert.Positive(t, rep.Acquisitions["cs2"])
	assert.Equal(t, maxLeases, rep.MaxLeases, "the semaphore was used to its maximum")
}
