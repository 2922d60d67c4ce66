//go:build linux

package robustness_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/robustness"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// workTake is one take of a work queue under test: the item, the take's
// token and its ack.
type workTake struct {
	item, name string
	token      int64
	ack        func(context.Context) error
}

// brokenWorkTake takes the first item of the queue at path without a lock:
// it reads it and writes it back, for a token, as the real take does, and
// acks by deleting it at that version. Two consumers may hold one item.
func brokenWorkTake(conn *zk.Conn, path string) func(context.Context) (workTake, error) {
	return func(ctx context.Context) (workTake, error) {
		for {
			p, data, st, err := pollHead(ctx, conn, path)
			if err != nil {
				return workTake{}, err
			}
			if st, err = conn.Set(p, data, st.Version); err != nil {
				continue
			}
			// Curator's frame of one item: version, opcode, length, item, end.
			if len(data) < 10 {
				return workTake{}, fmt.Errorf("bad item %q", data)
			}
			v := st.Version
			return workTake{item: string(data[9 : len(data)-1]), name: p[len(path)+1:], token: st.Mzxid, ack: func(context.Context) error {
				if err := conn.Delete(p, v); err != nil {
					return fmt.Errorf("%w: %w", zr.ErrItemLost, err)
				}
				return nil
			}}, nil
		}
	}
}

// pollHead polls path's children until there is one, and reads the first
// by name: the head a broken take, which sets no watch, goes for. It
// returns its path, data and Stat, or ctx's error.
func pollHead(ctx context.Context, conn *zk.Conn, path string) (string, []byte, *zk.Stat, error) {
	for ctx.Err() == nil {
		kids, _, err := conn.Children(path)
		if err != nil || len(kids) == 0 {
			time.Sleep(5 * time.Millisecond) // polling: this variant has no watch
			continue
		}
		sort.Strings(kids)
		p := path + "/" + kids[0]
		data, st, err := conn.Get(p)
		if err != nil {
			continue
		}
		return p, data, st, nil
	}
	return "", nil, nil, ctx.Err()
}

// putHalf is the first half of a driver's step on a queue: every other
// time (at random) it puts a new item with put, logged under verb as the
// queue models read it, and reports true; else it does nothing and
// reports false, for the step to take instead.
func putHalf(ctx context.Context, lg *chaos.Log, actor, verb string, n *atomic.Int64, put func(context.Context, []byte) error) bool {
	if rand.IntN(2) != 0 {
		return false
	}
	item := fmt.Sprintf("i%d", n.Add(1))
	lg.Add(robustness.Call, actor, verb, item)
	if err := put(ctx, []byte(item)); err != nil {
		lg.Add(robustness.Return, actor, verb, "unknown", err)
		return true
	}
	lg.Add(robustness.Return, actor, verb, "ok")
	return true
}

// TestWorkQueueCheckersCatchABrokenWorkQueue shows that the work queue's
// model and its overlap check can fail: a work queue whose take holds no
// lock, driven as the robustness client drives WorkQueue (puts, takes held
// a little, acks) on one server without faults, is rejected by both, while
// WorkQueue under the same driver passes both and loses no item.
func TestWorkQueueCheckersCatchABrokenWorkQueue(t *testing.T) {
	ens := zktest.Start(t)
	const workers = 4
	run := func(t *testing.T, path string, broken bool) (robustness.Result, robustness.WorkQueueReport) {
		var n atomic.Int64
		events := driveOps(t, workers, 2*time.Second, func(int) func(ctx context.Context, lg *chaos.Log, actor string) {
			q := zr.NewWorkQueue(session(t, ens), path)
			take := func(ctx context.Context) (workTake, error) {
				wi, err := q.Take(ctx)
				if err != nil {
					return workTake{}, err
				}
				return workTake{item: string(wi.Data()), name: wi.Name(), token: wi.Token(), ack: wi.Ack}, nil
			}
			if broken {
				take = brokenWorkTake(rawConn(t, ens), path)
			}
			return func(ctx context.Context, lg *chaos.Log, actor string) {
				if putHalf(ctx, lg, actor, "put", &n, func(ctx context.Context, b []byte) error { return q.Put(ctx, b) }) {
					return
				}
				tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				lg.Add(robustness.Call, actor, "take")
				tk, err := take(tctx)
				if err != nil {
					lg.Add(chaos.Failed, actor, err)
					return
				}
				lg.Add(chaos.Acquired, actor, tk.token, tk.item, tk.name)
				time.Sleep(time.Duration(5+rand.IntN(15)) * time.Millisecond) // the work: a held item
				lg.Add(chaos.Stop, actor, tk.token, "ack")
				lg.Add(robustness.Call, actor, "ack", tk.token)
				switch err := tk.ack(ctx); {
				case err == nil:
					lg.Add(robustness.Return, actor, "ack", "ok", tk.token)
				case errors.Is(err, zr.ErrItemLost):
					lg.Add(robustness.Return, actor, "ack", "lost", tk.token, err)
				case errors.Is(err, zr.ErrOutcomeUnknown):
					lg.Add(robustness.Return, actor, "ack", "unknown", tk.token, err)
				default:
					lg.Add(robustness.Return, actor, "ack", "fail", tk.token, err)
				}
			}
		})
		// Drain what is left.
		q := zr.NewWorkQueue(session(t, ens), path)
		var left []string
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			wi, err := q.Take(ctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
			require.NoError(t, err)
			left = append(left, string(wi.Data()))
			require.NoError(t, wi.Ack(context.Background()))
		}
		evs := robustness.ForWorkload(events, "ops")
		res := robustness.Check("workqueue", robustness.WorkQueueModel, robustness.WorkQueueOperations(evs), time.Minute, "")
		return res, robustness.CheckWorkQueue(evs, left, nil, nil)
	}
	t.Run("work queue whose take holds no lock", func(t *testing.T) {
		res, rep := run(t, "/broken/wq", true)
		t.Logf("%s; %s", res, rep)
		assert.Equal(t, string(porcupine.Illegal), res.Verdict, "the work queue model accepted an item held by two consumers")
		assert.NotEmpty(t, rep.Overlaps, "the overlap check accepted an item held by two consumers")
	})
	t.Run("WorkQueue under the same driver", func(t *testing.T) {
		res, rep := run(t, "/broken/workqueue", false)
		t.Logf("%s; %s", res, rep)
		assert.True(t, res.OK(), res.Verdict)
		assert.Empty(t, rep.Violations())
		assert.Greater(t, rep.Acked, 20)
	})
}
