package recipes_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
)

// The WorkQueue's operations in the reply-fault sweep: whatever reply is
// lost or held, no item is lost or duplicated, an operation that reports
// success did what it says, and no lock of the consumer's is left once it
// has returned (and its background clean-up had time to run).

// sweepCheckOf runs wi's Check in a transaction until the server answers
// it, or wi is lost: a connection lost under the check is the check's own
// fault, not the take's (seen beside heavy load, after the fault's reset).
func sweepCheckOf(s *zr.Session, wi *zr.WorkItem) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.Multi(context.Background(), wi.Check())
		if err == nil || errors.Is(err, zr.ErrItemLost) || wi.Err() != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond) // paces the tries while the connection comes back; orders nothing
	}
}

// sweepWorkQueue is the queue of a cell; its locks are under
// sweepWorkQueue(e)+"-locks".
func sweepWorkQueue(e *sweepEnv) string { return e.path + "/q" }

// sweepWorkPut puts items, from outside, as Curator's DistributedQueue
// does: a queue-<seq> node each, in Curator's item encoding.
func sweepWorkPut(e *sweepEnv, items ...string) error { return sweepWorkPutAs(e, "queue-", items...) }

// sweepWorkPutAs puts items, from outside, as nodes named prefix<seq>
// ("queue-|<id>|" for Curator's DistributedIdQueue).
func sweepWorkPutAs(e *sweepEnv, prefix string, items ...string) error {
	q := sweepWorkQueue(e)
	for _, p := range []string{q, q + "-locks"} {
		if _, err := e.obs.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	for _, it := range items {
		b := binary.BigEndian.AppendUint32(nil, 0x00010001)
		b = append(b, 1)
		b = binary.BigEndian.AppendUint32(b, uint32(len(it)))
		b = append(append(b, it...), 2)
		if _, err := e.obs.Create(q+"/"+prefix, b, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			return err
		}
	}
	return nil
}

// sweepWorkItems returns the items in the queue, by name, decoded.
func sweepWorkItems(e *sweepEnv) map[string]string {
	q := sweepWorkQueue(e)
	kids, _, _ := e.obs.Children(q)
	out := map[string]string{}
	for _, k := range kids {
		if d, _, err := e.obs.Get(q + "/" + k); err == nil && len(d) >= 10 {
			out[k] = string(d[9 : len(d)-1])
		}
	}
	return out
}

// sweepWorkLocks returns the lock nodes of e's Session.
func sweepWorkLocks(e *sweepEnv) []string {
	q := sweepWorkQueue(e) + "-locks"
	kids, _, _ := e.obs.Children(q)
	var out []string
	for _, k := range kids {
		if _, st, err := e.obs.Get(q + "/" + k); err == nil && st.EphemeralOwner == e.sid {
			out = append(out, k)
		}
	}
	return out
}

// sweepWorkConserved reports items lost or duplicated: the queue's items
// plus those acked must be want.
func sweepWorkConserved(e *sweepEnv, acked []string, want ...string) []string {
	all := slices.Clone(acked)
	for _, it := range sweepWorkItems(e) {
		all = append(all, it)
	}
	sort.Strings(all)
	if !slices.Equal(all, want) {
		return []string{fmt.Sprintf("items lost or duplicated: queue %v, acked %v; want %v", sweepWorkItems(e), acked, want)}
	}
	return nil
}

// sweepNoLockLeft reports a lock of e's Session still there once the
// background clean-up had time to run.
func sweepNoLockLeft(e *sweepEnv) []string {
	if !eventually(sweepSettle, func() bool { return len(sweepWorkLocks(e)) == 0 }) {
		return []string{fmt.Sprintf("locks left: %v", sweepWorkLocks(e))}
	}
	return nil
}

// workQueuePutOp: a put item is enqueued once (nil error) or at most once
// (an error); an error after which it was enqueued, unless ctx ended (the
// node is then deleted in the background), says so (ErrOutcomeUnknown).
func workQueuePutOp() sweepOp {
	return sweepOp{
		name: "WorkQueue.Put",
		setup: func(ctx context.Context, e *sweepEnv) error {
			return sweepWorkPut(e) // the queue's paths, no item
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			return zr.NewWorkQueue(e.s, sweepWorkQueue(e)).Put(ctx, []byte("item"))
		},
		compete: func(e *sweepEnv) { // another consumer takes and acks what is there
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			wi, err := zr.NewWorkQueue(e.peer, sweepWorkQueue(e)).Take(ctx)
			if err == nil && wi.Ack(ctx) == nil {
				e.set("taken", 1)
			}
		},
		check: func(e *sweepEnv, err error) []string {
			taken, _ := e.get("taken").(int)
			count := func() int { return len(sweepWorkItems(e)) + taken }
			n := count()
			switch {
			case n > 1:
				return []string{fmt.Sprintf("the item was enqueued %d times", n)}
			case err == nil && n == 0:
				return []string{"reported enqueued, no item"}
			case err != nil && errors.Is(err, context.DeadlineExceeded):
				// ctx ended: the item is deleted in the background.
				if !eventually(sweepSettle, func() bool { return count() == taken }) {
					return []string{"ctx ended and the item stayed"}
				}
			case err != nil && n == 1 && !errors.Is(err, zr.ErrOutcomeUnknown):
				return []string{fmt.Sprintf("reported failed, the item enqueued, without ErrOutcomeUnknown: %v", err)}
			}
			return nil
		},
	}
}

// workQueueTakeOp: with items a, b queued and another consumer taking and
// acking the head as the competing change, a take returns an item it holds
// (its lock and its version in place), or an error and no lock.
func workQueueTakeOp() sweepOp {
	return sweepOp{
		name:  "WorkQueue.Take",
		setup: func(ctx context.Context, e *sweepEnv) error { return sweepWorkPut(e, "a", "b") },
		run: func(ctx context.Context, e *sweepEnv) error {
			wi, err := zr.NewWorkQueue(e.s, sweepWorkQueue(e)).Take(ctx)
			e.set("item", wi)
			return err
		},
		compete: func(e *sweepEnv) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			wi, err := zr.NewWorkQueue(e.peer, sweepWorkQueue(e)).Take(ctx)
			if err == nil && wi.Ack(ctx) == nil {
				e.set("other", string(wi.Data()))
			}
		},
		check: func(e *sweepEnv, err error) []string {
			wi, _ := e.get("item").(*zr.WorkItem)
			var acked []string
			if other, _ := e.get("other").(string); other != "" {
				acked = append(acked, other)
			}
			var out []string
			switch {
			case err != nil && wi != nil:
				out = append(out, fmt.Sprintf("an item with an error: %v", err))
			case err != nil:
			case wi == nil:
				return []string{"no item and no error"}
			default:
				held := wi.Err() == nil
				if held && !slices.Contains(sweepWorkLocks(e), wi.Name()) {
					out = append(out, fmt.Sprintf("took %s, whose lock is not this session's", wi.Name()))
				}
				if cerr := sweepCheckOf(e.s, wi); held && cerr != nil && wi.Err() == nil {
					out = append(out, fmt.Sprintf("took %s, whose check fails: %v", wi.Name(), cerr))
				}
				if !e.competed && held && string(wi.Data()) != "a" {
					out = append(out, fmt.Sprintf("took %q, not the head", wi.Data()))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if aerr := wi.Ack(ctx); aerr == nil {
					acked = append(acked, string(wi.Data()))
				} else if held {
					out = append(out, fmt.Sprintf("the Ack of a held item failed: %v", aerr))
				}
			}
			out = append(out, sweepNoLockLeft(e)...)
			return append(out, sweepWorkConserved(e, acked, "a", "b")...)
		},
	}
}

// workQueueEndOp: a taken item a (b queued behind it) is acked, or
// released: success means done; an error leaves a once, acked or not
// (released or not); the lock goes either way.
func workQueueEndOp(release bool) sweepOp {
	name := "WorkQueue.Ack"
	if release {
		name = "WorkQueue.Release"
	}
	return sweepOp{
		name: name,
		setup: func(ctx context.Context, e *sweepEnv) error {
			if err := sweepWorkPut(e, "a", "b"); err != nil {
				return err
			}
			wi, err := zr.NewWorkQueue(e.s, sweepWorkQueue(e)).Take(ctx)
			if err == nil && string(wi.Data()) != "a" {
				err = fmt.Errorf("took %q, not a", wi.Data())
			}
			e.set("item", wi)
			return err
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			wi := e.get("item").(*zr.WorkItem)
			if release {
				return wi.Release(ctx)
			}
			return wi.Ack(ctx)
		},
		check: func(e *sweepEnv, err error) []string {
			wi := e.get("item").(*zr.WorkItem)
			out := sweepNoLockLeft(e)
			items := sweepWorkItems(e)
			_, stays := items[wi.Name()]
			switch {
			case err == nil && stays:
				out = append(out, "reported done, the item stays under its name")
			case errors.Is(err, zr.ErrItemLost):
				out = append(out, fmt.Sprintf("ErrItemLost with no other consumer: %v", err))
			}
			if release {
				return append(out, sweepWorkConserved(e, nil, "a", "b")...)
			}
			if err == nil || !stays {
				return append(out, sweepWorkConserved(e, []string{"a"}, "a", "b")...)
			}
			return append(out, sweepWorkConserved(e, nil, "a", "b")...)
		},
	}
}

// workQueueRemoveOp: with items a and b of the id "job" and c of another
// queued, and another consumer taking and acking the head as the
// competing change, Remove counts only items it deleted, deletes no item
// of another id, on success leaves no free item of the id, settles a lost
// reply (the session stays: it succeeds), and leaves no lock.
func workQueueRemoveOp() sweepOp {
	return sweepOp{
		name: "WorkQueue.Remove",
		setup: func(ctx context.Context, e *sweepEnv) error {
			if err := sweepWorkPutAs(e, "queue-|job|", "a", "b"); err != nil {
				return err
			}
			return sweepWorkPutAs(e, "queue-|other|", "c")
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			n, err := zr.NewWorkQueue(e.s, sweepWorkQueue(e)).Remove(ctx, "job")
			e.set("n", n)
			return err
		},
		compete: func(e *sweepEnv) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			wi, err := zr.NewWorkQueue(e.peer, sweepWorkQueue(e)).Take(ctx)
			if err == nil && wi.Ack(ctx) == nil {
				e.set("other", string(wi.Data()))
			}
		},
		check: func(e *sweepEnv, err error) []string {
			n, _ := e.get("n").(int)
			acked, _ := e.get("other").(string)
			out := sweepNoLockLeft(e)
			left := map[string]bool{}
			for _, it := range sweepWorkItems(e) {
				left[it] = true
			}
			if !left["c"] && acked != "c" {
				out = append(out, "c, of another id, was removed")
			}
			gone := 0 // items of the id gone, not acked by the competitor
			for _, it := range []string{"a", "b"} {
				if !left[it] && acked != it {
					gone++
				}
			}
			switch {
			case n > gone:
				out = append(out, fmt.Sprintf("counted %d removed, %d gone", n, gone))
			case err == nil && n != gone:
				out = append(out, fmt.Sprintf("reported done, counted %d removed, %d gone", n, gone))
			case err == nil && !e.competed && (left["a"] || left["b"]):
				out = append(out, fmt.Sprintf("reported done, items of the id left: %v", sweepWorkItems(e)))
			case err != nil && n < gone && !errors.Is(err, zr.ErrOutcomeUnknown) && !ctxOrConn(err):
				out = append(out, fmt.Sprintf("%d gone uncounted, without ErrOutcomeUnknown: %v", gone-n, err))
			case err != nil && e.fault != "hold":
				// A lost reply on the same session is settled by the lock's token.
				out = append(out, fmt.Sprintf("failed after a lost reply, on the same session: %v", err))
			}
			return out
		},
	}
}
