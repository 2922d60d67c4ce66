package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/internal/fleet"
)

// lossReportBound is how long a lease may take to end once its node is
// seen gone (a fenced write refused): the deletion's watch event, on a
// busy machine.
const lossReportBound = 30 * time.Second

// fencedContenders are Sessions of one process that take one Mutex in
// turn, again and again, and write to a data node under each lease (a
// Multi of Lease.Check and SetOp, as a user guards a write with it). Every
// acquisition, loss, stop and write is logged (and a write under each
// lease once released, which the server must refuse) in the lines chaos.Check and
// chaos.CheckWriteOrder read; an accepted write's line carries the node's
// new Mzxid, the server's own order of the writes. What a contender's
// goroutine finds wrong is kept for the test (no t.Fatal from a
// goroutine).
type fencedContenders struct {
	log        *chaos.Log
	logPath    string
	lock, data string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	acquired map[string]int
	problems []string
}

// newFencedContenders logs to a file of the test's. The data node must
// exist. The caller stops the contenders (stop) before their Sessions
// close, in a cleanup registered after theirs.
func newFencedContenders(t *testing.T, lock, data string) *fencedContenders {
	t.Helper()
	path := filepath.Join(t.TempDir(), "contenders.log")
	lg, err := chaos.OpenLog(path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	fc := &fencedContenders{log: lg, logPath: path, lock: lock, data: data, ctx: ctx, cancel: cancel, acquired: map[string]int{}}
	t.Cleanup(func() {
		fc.stop() // if the caller's did not run (a failed connect)
		_ = lg.Close()
	})
	return fc
}

// start runs a contender named id on s until stop.
func (fc *fencedContenders) start(id string, s *zr.Session) {
	fc.wg.Add(1)
	go func() {
		defer fc.wg.Done()
		fc.run(id, s)
	}()
}

// stop ends every contender, each releasing what it holds, and waits for
// them.
func (fc *fencedContenders) stop() {
	fc.cancel()
	fc.wg.Wait()
}

// counts returns how many leases each contender has acquired so far.
func (fc *fencedContenders) counts() map[string]int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	out := make(map[string]int, len(fc.acquired))
	for k, v := range fc.acquired {
		out[k] = v
	}
	return out
}

// eachAcquiredSince reports whether every contender in before has
// acquired a lease since before was taken (by counts).
func (fc *fencedContenders) eachAcquiredSince(before map[string]int) bool {
	now := fc.counts()
	for id, n := range before {
		if now[id] <= n {
			return false
		}
	}
	return true
}

func (fc *fencedContenders) problem(format string, args ...any) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.problems = append(fc.problems, fmt.Sprintf(format, args...))
}

func (fc *fencedContenders) run(id string, s *zr.Session) {
	ctx := fc.ctx
	m := zr.NewMutex(s, fc.lock, zr.WithNodeData([]byte(id)))
	for ctx.Err() == nil {
		l, err := m.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fc.log.Add(chaos.Failed, id, fleet.ErrText(err))
			_ = fleet.Sleep(ctx, 100*time.Millisecond) // pacing retries, ordering nothing
			continue
		}
		fc.mu.Lock()
		fc.acquired[id]++
		fc.mu.Unlock()
		h := fleet.Hold(fc.log, id, l)
		reason := fc.hold(ctx, id, s, l, h.Token())
		// A loss found by Release is logged by its DONE line.
		if err := h.Release(ctx, reason); err == nil && ctx.Err() == nil {
			fc.writeStale(ctx, id, s, l, h.Token())
		}
	}
}

// hold acts as the holder of l: up to three fenced writes, under the
// lease's Context, and returns why it stops ("release", "lost",
// "shutdown"). A write refused (the lease's node is gone) must be
// followed by the lease's end, reported with a cause.
func (fc *fencedContenders) hold(ctx context.Context, id string, s *zr.Session, l *zr.Lease, tok int64) string {
	lctx, cancel := l.Context(ctx)
	defer cancel()
	for range 3 {
		if lctx.Err() != nil {
			break
		}
		if fc.write(ctx, id, s, l, tok) == "refused" {
			select {
			case <-l.Done():
			case <-time.After(lossReportBound):
				fc.problem("%s token %d: a write was refused (its node gone) but the lease was still held %v later", id, tok, lossReportBound)
			}
			break
		}
		select {
		case <-lctx.Done():
		case <-time.After(20 * time.Millisecond): // the work between writes
		}
	}
	err := l.Err()
	switch {
	case err == nil && ctx.Err() != nil:
		return "shutdown"
	case err == nil:
		return "release"
	}
	if !errors.Is(err, zr.ErrLockLost) {
		fc.problem("%s token %d: the lease ended with %v, not ErrLockLost", id, tok, err)
	}
	if ctx.Err() == nil {
		select { // the lease's Context ends with the loss as its cause
		case <-lctx.Done():
			if c := context.Cause(lctx); ctx.Err() == nil && !errors.Is(c, zr.ErrLockLost) {
				fc.problem("%s token %d: the lease's Context ended with cause %v, not the loss", id, tok, c)
			}
		case <-time.After(lossReportBound):
			fc.problem("%s token %d: the lease was lost (%v) but its Context did not end", id, tok, err)
		}
	}
	return "lost"
}

// write makes one fenced write under l and logs it: "accepted <mzxid>",
// "refused" (the Check failed: the lease's node is gone) or "error".
func (fc *fencedContenders) write(ctx context.Context, id string, s *zr.Session, l *zr.Lease, tok int64) string {
	res, err := s.Multi(ctx, l.Check(), zr.SetOp(fc.data, []byte(fmt.Sprintf("%s %d", id, tok))))
	switch {
	case err == nil:
		if len(res) == 2 && res[1].Stat != nil {
			fc.log.Add(chaos.Write, id, tok, "accepted", res[1].Stat.Mzxid)
		} else {
			fc.log.Add(chaos.Write, id, tok, "accepted") // found applied after its reply was lost
		}
		return "accepted"
	case errors.Is(err, zr.ErrLockLost):
		fc.log.Add(chaos.Write, id, tok, "refused", fleet.ErrText(err))
		return "refused"
	default:
		fc.log.Add(chaos.Write, id, tok, "error", fleet.ErrText(err))
		return "error"
	}
}

// writeStale tries a write under l once its Release confirmed the delete
// of its node, as a former holder that has not noticed would: the server
// must refuse it ("WRITE <id> <tok> refused after-release").
func (fc *fencedContenders) writeStale(ctx context.Context, id string, s *zr.Session, l *zr.Lease, tok int64) {
	res, err := s.Multi(ctx, l.Check(), zr.SetOp(fc.data, []byte(fmt.Sprintf("%s %d stale", id, tok))))
	switch {
	case err == nil:
		if len(res) == 2 && res[1].Stat != nil {
			fc.log.Add(chaos.Write, id, tok, "accepted", res[1].Stat.Mzxid, "after-release")
		} else {
			fc.log.Add(chaos.Write, id, tok, "accepted", "after-release")
		}
		fc.problem("%s token %d: a write under the lease was accepted after its Release", id, tok)
	case errors.Is(err, zr.ErrLockLost):
		fc.log.Add(chaos.Write, id, tok, "refused", "after-release")
	default:
		fc.log.Add(chaos.Write, id, tok, "error", "after-release", fleet.ErrText(err))
	}
}

// events parses the log written so far.
func (fc *fencedContenders) events(t *testing.T) []chaos.Event {
	t.Helper()
	evs, err := chaos.ParseFile(fc.logPath)
	require.NoError(t, err)
	return evs
}

// acquiredBetween counts the ACQUIRED lines stamped in [from, to], per
// contender.
func acquiredBetween(evs []chaos.Event, from, to int64) map[string]int {
	out := map[string]int{}
	for _, ev := range evs {
		if ev.Kind == chaos.Acquired && ev.T >= from && ev.T <= to {
			out[ev.Actor]++
		}
	}
	return out
}

// lossesOf counts the DONE lines reporting a loss, per contender.
func lossesOf(evs []chaos.Event) map[string]int {
	out := map[string]int{}
	for _, ev := range evs {
		if ev.Kind == chaos.Done && strings.HasPrefix(ev.Rest, "lost") {
			out[ev.Actor]++
		}
	}
	return out
}

// tailLog returns the last n lines of the log.
func (fc *fencedContenders) tailLog(n int) string {
	b, err := os.ReadFile(fc.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
