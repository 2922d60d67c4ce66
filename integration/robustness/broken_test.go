//go:build linux

package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/internal/fleet"
	"github.com/zkrecipes/zkrecipes/integration/robustness"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// These tests show that each checker can fail: a deliberately broken
// variant of each recipe, driven by the same workload as the real one on
// one server without faults, must produce a history the checker rejects,
// while the real recipe's history under the same driver passes.

// lockHolder is one lease of a lock under test.
type lockHolder struct {
	token   int64
	release func()
}

// driveLock runs workers goroutines, each on a session of its own, that
// take the lock with acquire (a third of the attempts give up after a
// short deadline), write twice to a fenced store under the token, and
// release, for d; it returns the shared log's events.
func driveLock(t *testing.T, workers int, d time.Duration, connect func(i int) func(context.Context) (lockHolder, error)) []chaos.Event {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "shared.log")
	lg, err := chaos.OpenLog(logPath)
	require.NoError(t, err)
	store := &chaos.Store{}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range workers {
		acquire := connect(i)
		actor := fmt.Sprintf("g%d/lock", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				actx, acancel := ctx, context.CancelFunc(func() {})
				if rand.IntN(3) == 0 {
					actx, acancel = context.WithTimeout(ctx, time.Duration(20+rand.IntN(100))*time.Millisecond)
				}
				lg.Add(robustness.Call, actor, "acquire")
				h, err := acquire(actx)
				acancel()
				if err != nil {
					lg.Add(chaos.Failed, actor, err)
					continue
				}
				lg.Add(chaos.Acquired, actor, h.token)
				for range 2 {
					lg.Add(robustness.Call, actor, "write", h.token)
					res := "refused"
					if store.Offer(h.token) {
						res = "accepted"
					}
					lg.Add(chaos.Write, actor, h.token, res)
					time.Sleep(time.Duration(5+rand.IntN(10)) * time.Millisecond) // the holder's work
				}
				lg.Add(chaos.Stop, actor, h.token, "release")
				h.release()
				lg.Add(chaos.Released, actor, h.token, "ok")
				lg.Add(chaos.Done, actor, h.token, "released")
			}
		}()
	}
	wg.Wait()
	require.NoError(t, lg.Close())
	events, err := chaos.ParseFile(logPath)
	require.NoError(t, err)
	return events
}

// brokenLock is a queue lock that takes the deletion of its predecessor's
// node for a release, without listing the queue again: a waiter that gives
// up ahead of it hands it the lock while the holder still holds it.
func brokenLock(conn *zk.Conn, path string) func(context.Context) (lockHolder, error) {
	return func(ctx context.Context) (lockHolder, error) {
		node, err := conn.Create(path+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			return lockHolder{}, err
		}
		kids, _, err := conn.Children(path)
		if err != nil {
			_ = conn.Delete(node, -1)
			return lockHolder{}, err
		}
		sort.Strings(kids)
		me := node[strings.LastIndex(node, "/")+1:]
		i := sort.SearchStrings(kids, me)
		if i > 0 {
			_, _, w, err := conn.GetW(path + "/" + kids[i-1])
			if err == nil {
				select {
				case <-w: // BROKEN: any deletion ahead is taken for a release
				case <-ctx.Done():
					_ = conn.Delete(node, -1)
					return lockHolder{}, ctx.Err()
				}
			}
		}
		_, st, err := conn.Get(node)
		if err != nil {
			return lockHolder{}, err
		}
		return lockHolder{token: st.Czxid, release: func() { _ = conn.Delete(node, -1) }}, nil
	}
}

func rawConn(t *testing.T, ens *zktest.Cluster) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(ens.Servers(), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(fleet.Quiet{}))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	return conn
}

func session(t *testing.T, ens *zktest.Cluster) *zr.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zr.Connect(ctx, ens.Servers())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestCheckersCatchBrokenRecipes(t *testing.T) {
	ens := zktest.Start(t)
	const workers = 4

	t.Run("lock that takes every deletion for a release", func(t *testing.T) {
		path := "/broken/lock"
		setup := rawConn(t, ens)
		_, err := setup.Create("/broken", nil, 0, zk.WorldACL(zk.PermAll))
		require.True(t, err == nil || errors.Is(err, zk.ErrNodeExists), "%v", err)
		_, err = setup.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		events := driveLock(t, workers, 2*time.Second, func(int) func(context.Context) (lockHolder, error) {
			return brokenLock(rawConn(t, ens), path)
		})
		res := robustness.Check("broken-lock", robustness.LockModel, robustness.LockOperations(events), time.Minute, "")
		rep := chaos.Check(events)
		t.Logf("%s; overlap check: %d acquisitions, %d violations", res, rep.Acquisitions, len(rep.Violations))
		assert.Equal(t, string(porcupine.Illegal), res.Verdict, "the lock model accepted a lock that grants to two holders")
		assert.NotEmpty(t, rep.Violations, "the overlap check accepted a lock that grants to two holders")
	})

	t.Run("Mutex under the same driver", func(t *testing.T) {
		events := driveLock(t, workers, 2*time.Second, func(int) func(context.Context) (lockHolder, error) {
			m := zr.NewMutex(session(t, ens), "/broken/mutex")
			return func(ctx context.Context) (lockHolder, error) {
				l, err := m.Acquire(ctx)
				if err != nil {
					return lockHolder{}, err
				}
				return lockHolder{token: l.Token(), release: func() { _ = l.Release(context.Background()) }}, nil
			}
		})
		res := robustness.Check("mutex", robustness.LockModel, robustness.LockOperations(events), time.Minute, "")
		rep := chaos.Check(events)
		t.Logf("%s; overlap check: %d acquisitions, %d violations", res, rep.Acquisitions, len(rep.Violations))
		assert.True(t, res.OK(), res.Verdict)
		assert.Empty(t, rep.Violations)
		assert.Greater(t, rep.Acquisitions, 10)
	})

	semRun := func(t *testing.T, acquire func(i int) func(context.Context) (lockHolder, error)) robustness.Result {
		events := driveLock(t, workers, 2*time.Second, acquire)
		return robustness.Check("semaphore", robustness.SemaphoreModel(2), robustness.LockOperations(events), time.Minute, "")
	}
	t.Run("semaphore that counts the leases and then creates its own", func(t *testing.T) {
		path := "/broken/sem"
		setup := rawConn(t, ens)
		_, err := setup.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		res := semRun(t, func(int) func(context.Context) (lockHolder, error) {
			conn := rawConn(t, ens)
			return func(ctx context.Context) (lockHolder, error) {
				for ctx.Err() == nil {
					kids, _, w, err := conn.ChildrenW(path)
					if err != nil {
						return lockHolder{}, err
					}
					if len(kids) < 2 { // BROKEN: another client may create between the count and the create
						node, err := conn.Create(path+"/lease-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
						if err != nil {
							return lockHolder{}, err
						}
						_, st, err := conn.Get(node)
						if err != nil {
							return lockHolder{}, err
						}
						return lockHolder{token: st.Czxid, release: func() { _ = conn.Delete(node, -1) }}, nil
					}
					select {
					case <-w:
					case <-ctx.Done():
					}
				}
				return lockHolder{}, ctx.Err()
			}
		})
		t.Log(res)
		assert.Equal(t, string(porcupine.Illegal), res.Verdict, "the semaphore model accepted more holders than leases")
	})
	t.Run("Semaphore under the same driver", func(t *testing.T) {
		res := semRun(t, func(int) func(context.Context) (lockHolder, error) {
			sem := zr.NewSemaphore(session(t, ens), "/broken/semaphore", 2)
			return func(ctx context.Context) (lockHolder, error) {
				ls, err := sem.Acquire(ctx, 1)
				if err != nil {
					return lockHolder{}, err
				}
				return lockHolder{token: ls[0].Token(), release: func() { _ = ls[0].Release(context.Background()) }}, nil
			}
		})
		t.Log(res)
		assert.True(t, res.OK(), res.Verdict)
		assert.Greater(t, res.Operations, 20)
	})

	queueRun := func(t *testing.T, path string, broken bool) robustness.QueueReport {
		var n atomic.Int64
		events := driveOps(t, workers, 2*time.Second, func(int) func(ctx context.Context, lg *chaos.Log, actor string) {
			s := session(t, ens)
			q := zr.NewQueue(s, path)
			conn := rawConn(t, ens)
			take := q.Take
			if broken {
				// BROKEN: returns the head it read, whoever deleted it.
				take = func(ctx context.Context) ([]byte, error) {
					p, data, _, err := pollHead(ctx, conn, path)
					if err != nil {
						return nil, err
					}
					_ = conn.Delete(p, -1)
					return data, nil
				}
			}
			return func(ctx context.Context, lg *chaos.Log, actor string) {
				if putHalf(ctx, lg, actor, "offer", &n, q.Offer) {
					return
				}
				tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				lg.Add(robustness.Call, actor, "take")
				item, err := take(tctx)
				switch {
				case err == nil:
					lg.Add(robustness.Return, actor, "take", "ok", string(item))
				case errors.Is(err, zr.ErrTakeUncertain):
					lg.Add(robustness.Return, actor, "take", "uncertain", string(item))
				default:
					lg.Add(robustness.Return, actor, "take", "fail", err)
				}
			}
		})
		q := zr.NewQueue(session(t, ens), path)
		var left []string
		for {
			item, err := q.Poll(context.Background())
			if errors.Is(err, zr.ErrQueueEmpty) {
				break
			}
			require.NoError(t, err)
			left = append(left, string(item))
		}
		return robustness.CheckQueue(events, left)
	}
	t.Run("queue whose take returns the head whoever deleted it", func(t *testing.T) {
		rep := queueRun(t, "/broken/q", true)
		t.Log(rep)
		assert.NotEmpty(t, rep.Duplicates, "the queue check accepted an item taken twice")
	})
	t.Run("Queue under the same driver", func(t *testing.T) {
		rep := queueRun(t, "/broken/queue", false)
		t.Log(rep)
		assert.Empty(t, rep.Violations())
		assert.Greater(t, rep.Taken, 20)
	})

	// watchRun drives versioned sets of a shared count while each of
	// observers (by recipe) follows its node, and checks what they saw.
	type seenFn = func(data []byte, st *zr.NodeStat)
	type observeFn = func(ctx context.Context, s *zr.Session, path string, seen seenFn)
	watchRun := func(t *testing.T, path string, observers map[string]observeFn) robustness.WatchReport {
		ctx, cancel := context.WithCancel(context.Background())
		var done sync.WaitGroup
		logPath := filepath.Join(t.TempDir(), "watch.log")
		lg, err := chaos.OpenLog(logPath)
		require.NoError(t, err)
		s := session(t, ens)
		for recipe, observe := range observers {
			actor := robustness.ObserverActor("w", recipe, 1)
			done.Add(1)
			go func() {
				defer done.Done()
				observe(ctx, s, path, func(data []byte, st *zr.NodeStat) { robustness.LogSeen(lg, actor, data, st) })
			}()
		}
		events := driveOps(t, workers, 2*time.Second, func(int) func(ctx context.Context, lg *chaos.Log, actor string) {
			c := zr.NewSharedCount(session(t, ens), path, 0)
			return func(ctx context.Context, lg *chaos.Log, actor string) {
				v, err := c.Get(ctx)
				if err != nil {
					return
				}
				n := v.Count + 1 + int32(rand.IntN(5))
				lg.Add(robustness.Call, actor, "tryset", n, v.Version)
				r, err := c.TrySet(ctx, n, v.Version)
				switch {
				case err == nil:
					lg.Add(robustness.Return, actor, "tryset", "ok", true, r.Version)
				case errors.Is(err, zr.ErrVersionChanged):
					lg.Add(robustness.Return, actor, "tryset", "ok", false, 0)
				default:
					lg.Add(robustness.Return, actor, "tryset", "unknown", err)
				}
			}
		})
		cancel()
		done.Wait()
		require.NoError(t, lg.Close())
		seen, err := chaos.ParseFile(logPath)
		require.NoError(t, err)
		return robustness.CheckWatch(append(events, seen...), "ops")
	}
	recipe := func(name string) observeFn {
		return func(ctx context.Context, s *zr.Session, path string, seen seenFn) {
			_ = robustness.ObserveData(ctx, s, name, path, seen)
		}
	}
	t.Run("watch that reports the data it read before with the new stat", func(t *testing.T) {
		rep := watchRun(t, "/broken/watched", map[string]observeFn{robustness.WatchData: func(ctx context.Context, s *zr.Session, path string, seen seenFn) {
			var prev []byte
			_ = zr.WatchData(ctx, s, path, func(data []byte, st *zr.NodeStat) error {
				if st != nil && len(prev) == 4 {
					seen(prev, st) // BROKEN: stale data
				}
				prev = data
				return nil
			})
		}})
		t.Log(rep)
		assert.NotEmpty(t, rep.Violations, "the watch check accepted states never written")
	})
	t.Run("WatchData under the same driver", func(t *testing.T) {
		rep := watchRun(t, "/broken/watchdata", map[string]observeFn{robustness.WatchData: recipe(robustness.WatchData)})
		t.Log(rep)
		assert.Empty(t, rep.Violations)
		assert.Greater(t, rep.Seen, 20)
	})
	t.Run("node cache that reports the data it held before with the new stat", func(t *testing.T) {
		rep := watchRun(t, "/broken/cached", map[string]observeFn{robustness.NodeCache: func(ctx context.Context, s *zr.Session, path string, seen seenFn) {
			c := zr.NewNodeCache(s, path)
			if c.Start(ctx) != nil {
				return
			}
			defer c.Close(context.Background())
			var prev []byte
			for {
				select {
				case ev := <-c.Events():
					if ev.Node != nil && len(ev.Node.Data) == 4 {
						if len(prev) == 4 {
							seen(prev, &ev.Node.Stat) // BROKEN: stale data
						}
						prev = ev.Node.Data
					}
				case <-ctx.Done():
					return
				}
			}
		}})
		t.Log(rep)
		assert.NotEmpty(t, rep.Violations, "the watch check accepted states never written")
	})
	t.Run("NodeCache and TreeCache under the same driver", func(t *testing.T) {
		rep := watchRun(t, "/broken/caches", map[string]observeFn{robustness.NodeCache: recipe(robustness.NodeCache), robustness.TreeCache: recipe(robustness.TreeCache)})
		t.Log(rep)
		assert.Empty(t, rep.Violations)
		assert.Greater(t, rep.ByRecipe[robustness.NodeCache], 20)
		assert.Greater(t, rep.ByRecipe[robustness.TreeCache], 20)
	})

	// childrenRun offers and polls items of a queue while observe follows
	// the queue's children, and checks what it saw; it also returns whether
	// the observer ended at the queue's final listing.
	childrenRun := func(t *testing.T, path string, observe func(ctx context.Context, s *zr.Session, seen func(kids []string, st *zr.NodeStat))) (robustness.ChildrenReport, bool) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		logPath := filepath.Join(t.TempDir(), "children.log")
		lg, err := chaos.OpenLog(logPath)
		require.NoError(t, err)
		var last atomic.Int64
		conn := rawConn(t, ens)
		// The queue's node exists from the start, so that the observer has
		// a listing to follow before the first offer.
		require.NoError(t, zr.NewQueue(session(t, ens), path).Offer(context.Background(), []byte("first")))
		s := session(t, ens)
		go func() {
			defer close(done)
			actor := robustness.ObserverActor("w", robustness.Children, 1)
			observe(ctx, s, func(kids []string, st *zr.NodeStat) {
				robustness.LogListed(lg, actor, kids, st)
				if st == nil {
					last.Store(0)
				} else {
					last.Store(st.Pzxid)
				}
			})
		}()
		driveOps(t, workers, 2*time.Second, func(int) func(ctx context.Context, lg *chaos.Log, actor string) {
			q := zr.NewQueue(session(t, ens), path)
			return func(ctx context.Context, lg *chaos.Log, actor string) {
				if rand.IntN(2) == 0 {
					_ = q.Offer(ctx, []byte(actor))
				} else {
					_, _ = q.Poll(ctx)
				}
			}
		})
		final := int64(0) // the queue's node is a container: the server may delete it once empty
		_, st, err := conn.Children(path)
		if !errors.Is(err, zk.ErrNoNode) {
			require.NoError(t, err)
			final = st.Pzxid
		}
		ended := assert.Eventually(t, func() bool { return last.Load() == final }, 10*time.Second, 10*time.Millisecond)
		cancel()
		<-done
		require.NoError(t, lg.Close())
		events, err := chaos.ParseFile(logPath)
		require.NoError(t, err)
		return robustness.CheckChildren(events), ended
	}
	t.Run("children watch that reports the listing it read before with the new stat", func(t *testing.T) {
		rep, _ := childrenRun(t, "/broken/listed", func(ctx context.Context, s *zr.Session, seen func([]string, *zr.NodeStat)) {
			var prev []string
			_ = zr.WatchChildren(ctx, s, "/broken/listed", func(kids []string, st *zr.NodeStat) error {
				if st != nil && prev != nil {
					seen(prev, st) // BROKEN: stale listing
				}
				prev = kids
				return nil
			})
		})
		t.Log(rep)
		assert.NotEmpty(t, rep.Violations, "the children check accepted listings that do not match their stat")
	})
	t.Run("WatchChildren under the same driver", func(t *testing.T) {
		rep, ended := childrenRun(t, "/broken/children", func(ctx context.Context, s *zr.Session, seen func([]string, *zr.NodeStat)) {
			_ = robustness.ObserveChildren(ctx, s, "/broken/children", seen)
		})
		t.Log(rep)
		assert.Empty(t, rep.Violations)
		assert.Greater(t, rep.Listed, 20)
		assert.True(t, ended, "the observer did not end at the final listing")
	})

	// add reads then writes pre+delta whatever happened in between (no
	// version check); ok says whether to do it right.
	counterRun := func(t *testing.T, path string, ok bool) robustness.Result {
		events := driveOps(t, workers, 2*time.Second, func(int) func(ctx context.Context, lg *chaos.Log, actor string) {
			c := zr.NewAtomicCounter(session(t, ens), path)
			return func(ctx context.Context, lg *chaos.Log, actor string) {
				if rand.IntN(3) == 0 {
					lg.Add(robustness.Call, actor, "get")
					v, err := c.Get(ctx)
					if err != nil {
						lg.Add(robustness.Return, actor, "get", "fail", err)
						return
					}
					lg.Add(robustness.Return, actor, "get", "ok", v)
					return
				}
				d := int64(1 + rand.IntN(5))
				lg.Add(robustness.Call, actor, "add", d)
				if ok {
					r, err := c.Add(ctx, d)
					if err != nil || !r.Succeeded {
						lg.Add(robustness.Return, actor, "add", "fail", err)
						return
					}
					lg.Add(robustness.Return, actor, "add", "ok", r.PreValue)
					return
				}
				pre, err := c.Get(ctx)
				if err == nil {
					_, err = c.Set(ctx, pre+d) // BROKEN: no version check
				}
				if err != nil {
					lg.Add(robustness.Return, actor, "add", "unknown", err)
					return
				}
				lg.Add(robustness.Return, actor, "add", "ok", pre)
			}
		})
		return robustness.Check("counter", robustness.CounterModel, robustness.CounterOperations(events), time.Minute, "")
	}
	t.Run("counter without version check", func(t *testing.T) {
		res := counterRun(t, "/broken/counter", false)
		t.Log(res)
		assert.Equal(t, string(porcupine.Illegal), res.Verdict, "the counter model accepted lost updates")
	})
	t.Run("AtomicCounter under the same driver", func(t *testing.T) {
		res := counterRun(t, "/broken/atomic", true)
		t.Log(res)
		assert.True(t, res.OK(), res.Verdict)
	})

	countRun := func(t *testing.T, path string, ok bool) robustness.Result {
		events := driveOps(t, workers, 2*time.Second, func(int) func(ctx context.Context, lg *chaos.Log, actor string) {
			c := zr.NewSharedCount(session(t, ens), path, 0)
			return func(ctx context.Context, lg *chaos.Log, actor string) {
				lg.Add(robustness.Call, actor, "cget")
				v, err := c.Get(ctx)
				if err != nil {
					lg.Add(robustness.Return, actor, "cget", "fail", err)
					return
				}
				lg.Add(robustness.Return, actor, "cget", "ok", v.Count, v.Version)
				n := v.Count + 1
				lg.Add(robustness.Call, actor, "tryset", n, v.Version)
				var r zr.VersionedCount
				if ok {
					r, err = c.TrySet(ctx, n, v.Version)
				} else {
					r, err = c.Set(ctx, n) // BROKEN: a versioned set that ignores the version
				}
				switch {
				case err == nil:
					lg.Add(robustness.Return, actor, "tryset", "ok", true, r.Version)
				case errors.Is(err, zr.ErrVersionChanged):
					lg.Add(robustness.Return, actor, "tryset", "ok", false, 0)
				default:
					lg.Add(robustness.Return, actor, "tryset", "unknown", err)
				}
			}
		})
		return robustness.Check("sharedcount", robustness.SharedCountModel, robustness.CounterOperations(events), time.Minute, "")
	}
	t.Run("shared count whose versioned set ignores the version", func(t *testing.T) {
		res := countRun(t, "/broken/count", false)
		t.Log(res)
		assert.Equal(t, string(porcupine.Illegal), res.Verdict, "the shared count model accepted a set over a stale version")
	})
	t.Run("SharedCount under the same driver", func(t *testing.T) {
		res := countRun(t, "/broken/sharedcount", true)
		t.Log(res)
		assert.True(t, res.OK(), res.Verdict)
	})
}

// driveOps runs workers goroutines, each with the operation connect(i)
// returns (on a session of its own), again and again for d, and returns
// the shared log's events.
func driveOps(t *testing.T, workers int, d time.Duration, connect func(i int) func(ctx context.Context, lg *chaos.Log, actor string)) []chaos.Event {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "shared.log")
	lg, err := chaos.OpenLog(logPath)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range workers {
		op := connect(i)
		actor := fmt.Sprintf("g%d/ops", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				octx, ocancel := context.WithTimeout(context.Background(), 5*time.Second)
				op(octx, lg, actor)
				ocancel()
			}
		}()
	}
	wg.Wait()
	require.NoError(t, lg.Close())
	events, err := chaos.ParseFile(logPath)
	require.NoError(t, err)
	return events
}
