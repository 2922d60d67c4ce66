package zkrecipes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The recipes added after the locks, in the shape of badRecipes: each gets
// the bad-path, nil-session, nil-option and nil-context rows of
// TestEveryPublicCallRejectsBadInputWithATypedError and
// TestNilContextIsAnErrorNotAPanic. Rows that are not a path, a session or
// an option are in badInputMoreTable.
var badRecipesSinceLocks = []recipeUnderTest{
	{"NodeCache", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		if nilOpt {
			return nil // no options
		}
		c := NewNodeCache(s, path)
		return map[string]func(context.Context) error{
			"Start": func(ctx context.Context) error { return c.Start(ctx) },
		}
	}},
	{"WatchData", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		if nilOpt {
			return nil
		}
		return map[string]func(context.Context) error{
			"": func(ctx context.Context) error {
				return WatchData(ctx, s, path, func([]byte, *NodeStat) error { return nil })
			},
		}
	}},
	{"WatchChildren", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		if nilOpt {
			return nil
		}
		return map[string]func(context.Context) error{
			"": func(ctx context.Context) error {
				return WatchChildren(ctx, s, path, func([]string, *NodeStat) error { return nil })
			},
		}
	}},
	{"Barrier", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []BarrierOption
		if nilOpt {
			opts = append(opts, nil)
		}
		b := NewBarrier(s, path, opts...)
		return map[string]func(context.Context) error{
			"Set":    func(ctx context.Context) error { return b.Set(ctx) },
			"Remove": func(ctx context.Context) error { return b.Remove(ctx) },
			"Wait":   func(ctx context.Context) error { return b.Wait(ctx) },
			"IsSet":  func(ctx context.Context) error { _, err := b.IsSet(ctx); return err },
		}
	}},
	{"DoubleBarrier", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		if nilOpt {
			return nil
		}
		b := NewDoubleBarrier(s, path, 2)
		return map[string]func(context.Context) error{
			"Enter": func(ctx context.Context) error { return b.Enter(ctx) },
			"Leave": func(ctx context.Context) error { return b.Leave(ctx) },
		}
	}},
	{"Queue", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		if nilOpt {
			return nil
		}
		q := NewQueue(s, path)
		return map[string]func(context.Context) error{
			"Offer": func(ctx context.Context) error { return q.Offer(ctx, []byte("x")) },
			"Take":  func(ctx context.Context) error { _, err := q.Take(ctx); return err },
			"Poll":  func(ctx context.Context) error { _, err := q.Poll(ctx); return err },
			"Peek":  func(ctx context.Context) error { _, err := q.Peek(ctx); return err },
		}
	}},
	{"Revoke", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		if nilOpt {
			return nil
		}
		return map[string]func(context.Context) error{
			"": func(ctx context.Context) error { return Revoke(ctx, s, path) },
		}
	}},
	{"Mutex(revocable, lease time)", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		opts := []LockOption{WithRevocable(), WithLeaseTime(time.Minute)}
		if nilOpt {
			opts = append(opts, nil)
		}
		m := NewMutex(s, path, opts...)
		return map[string]func(context.Context) error{
			"Acquire": func(ctx context.Context) error { _, err := m.Acquire(ctx); return err },
		}
	}},
}

func init() { badRecipes = append(badRecipes, badRecipesSinceLocks...) }

// huge is more than ZooKeeper's default jute.maxbuffer (1 MiB - 1).
var huge = make([]byte, 1100*1024)

// badInputMoreTable holds the rows of the recipes added after the locks
// that are not a path, a session or an option: counts, durations, enum
// values, nil callbacks and data too large, each refused before any
// ZooKeeper call.
func badInputMoreTable() []badCall {
	unused := &Session{} // never reached: validation comes first
	noop := func(context.Context, *Lease) error { return nil }
	mutexWith := func(opts ...LockOption) func(context.Context) error {
		return func(ctx context.Context) error { _, err := NewMutex(unused, "/a", opts...).Acquire(ctx); return err }
	}
	rows := []badCall{
		{"DoubleBarrier(n 0).Enter", func(ctx context.Context) error { return NewDoubleBarrier(unused, "/a", 0).Enter(ctx) }, ErrInvalidArgument},
		{"DoubleBarrier(n -1).Enter", func(ctx context.Context) error { return NewDoubleBarrier(unused, "/a", -1).Enter(ctx) }, ErrInvalidArgument},
		{"DoubleBarrier(n 0).Leave", func(ctx context.Context) error { return NewDoubleBarrier(unused, "/a", 0).Leave(ctx) }, ErrInvalidArgument},
		{"WatchData(nil fn)", func(ctx context.Context) error { return WatchData(ctx, unused, "/a", nil) }, ErrInvalidArgument},
		{"WatchChildren(nil fn)", func(ctx context.Context) error { return WatchChildren(ctx, unused, "/a", nil) }, ErrInvalidArgument},
		{"TreeCache(nil path filter).Start", func(ctx context.Context) error {
			return NewTreeCache(unused, "/a", WithPathFilter(nil)).Start(ctx)
		}, ErrInvalidArgument},
		{"TreeCache(max depth -2).Start", func(ctx context.Context) error {
			return NewTreeCache(unused, "/a", WithMaxDepth(-2)).Start(ctx)
		}, ErrInvalidArgument},
		{"Mutex(lease time 0).Acquire", mutexWith(WithLeaseTime(0)), ErrInvalidArgument},
		{"Mutex(lease time -1s).Acquire", mutexWith(WithLeaseTime(-time.Second)), ErrInvalidArgument},
		{"Mutex(1.1 MB node data).Acquire", mutexWith(WithNodeData(huge)), ErrDataTooLarge},
		{"RWMutex(lease time 0).ReadLock.Acquire", func(ctx context.Context) error {
			_, err := NewRWMutex(unused, "/a", WithLeaseTime(0)).ReadLock().Acquire(ctx)
			return err
		}, ErrInvalidArgument},
		{"Semaphore(lease time -1s).Acquire", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 2, WithLeaseTime(-time.Second)).Acquire(ctx, 1)
			return err
		}, ErrInvalidArgument},
		{"Semaphore.Available(max 0)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 0).Available(ctx)
			return err
		}, ErrInvalidArgument},
		{"Semaphore.Participants(max -1)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", -1).Participants(ctx)
			return err
		}, ErrInvalidArgument},
		{"Election(1.1 MB participant id).Campaign", func(ctx context.Context) error {
			_, err := NewElection(unused, "/a", WithParticipantID(string(huge))).Campaign(ctx)
			return err
		}, ErrDataTooLarge},
		{"Election.Run(nil fn)", func(ctx context.Context) error { return NewElection(unused, "/a").Run(ctx, nil) }, ErrInvalidArgument},
		{"Election.Run(nil option)", func(ctx context.Context) error { return NewElection(unused, "/a").Run(ctx, noop, nil) }, ErrInvalidArgument},
		{"Election.Proclaim(nil lease)", func(ctx context.Context) error {
			return NewElection(unused, "/a", WithProclaim()).Proclaim(ctx, nil, []byte("x"))
		}, ErrInvalidArgument},
		{"Election.Proclaim(zero lease)", func(ctx context.Context) error {
			return NewElection(unused, "/a", WithProclaim()).Proclaim(ctx, &Lease{}, []byte("x"))
		}, ErrInvalidArgument},
		{"Barrier(1.1 MB data).Set", func(ctx context.Context) error { return NewBarrier(unused, "/a", WithBarrierData(huge)).Set(ctx) }, ErrDataTooLarge},
		{"Barrier(nil option, bad path).Set", func(ctx context.Context) error { return NewBarrier(unused, "a", nil).Set(ctx) }, ErrInvalidArgument},
		{"Queue.Offer(1.1 MB)", func(ctx context.Context) error { return NewQueue(unused, "/a").Offer(ctx, huge) }, ErrDataTooLarge},
		{"PersistentNode(mode -1).Start", func(context.Context) error {
			return NewPersistentNode(unused, "/a", nil, WithCreateMode(CreateMode(-1))).Start()
		}, ErrInvalidArgument},
		{"PersistentNode(nil option).Start", func(context.Context) error { return NewPersistentNode(unused, "/a", nil, nil).Start() }, ErrInvalidArgument},
		{"GroupMember(id with control char).Start", func(ctx context.Context) error {
			return NewGroupMember(unused, "/a", "m\x01", nil).Start(ctx)
		}, ErrInvalidArgument},
		{"GroupMember(id .).Start", func(ctx context.Context) error { return NewGroupMember(unused, "/a", ".", nil).Start(ctx) }, ErrInvalidArgument},
	}
	servers := []string{"127.0.0.1:1"} // never dialled: validation comes first
	for _, n := range []int{0, -1} {
		rows = append(rows, badCall{fmt.Sprintf("Connect(max request size %d)", n), func(ctx context.Context) error {
			_, err := Connect(ctx, servers, WithMaxRequestSize(n))
			return err
		}, ErrInvalidArgument})
	}
	return rows
}

func TestRecipesSinceTheLocksRejectBadInputWithATypedError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, row := range badInputMoreTable() {
		t.Run(row.name, func(t *testing.T) {
			err := callNoPanic(t, func() error { return row.call(ctx) })
			assert.ErrorIs(t, err, row.want)
			if err != nil {
				assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
			}
		})
	}
}

// TestInvalidRecipesCloseAndReadWithoutPanic: the calls that return no
// error (Close, Get, Events, Err, Status) on a recipe made with bad input
// neither panic nor block, and Err reports the input error.
func TestInvalidRecipesCloseAndReadWithoutPanic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc := NewNodeCache(nil, "/a")
	tc := NewTreeCache(&Session{}, "rel")
	pn := NewPersistentNode(nil, "/a", nil)
	gm := NewGroupMember(&Session{}, "/a", "", nil)
	calls := map[string]func() error{
		"NodeCache.Get":               func() error { nc.Get(); return nil },
		"NodeCache.Events":            func() error { nc.Events(); return nil },
		"NodeCache.Close":             nc.Close,
		"NodeCache.Close again":       nc.Close,
		"NodeCache.Start after Close": func() error { return nc.Start(ctx) },
		"TreeCache.Get":               func() error { tc.Get("/x"); tc.Children("rel"); tc.Snapshot(); tc.Len(); return nil },
		"TreeCache.Close":             tc.Close,
		"TreeCache.Close again":       tc.Close,
		"PersistentNode.Status":       func() error { pn.Status(); pn.Data(); return nil },
		"PersistentNode.Close":        func() error { return pn.Close(ctx) },
		"PersistentNode.Close 2":      func() error { return pn.Close(ctx) },
		"GroupMember.Members":         func() error { gm.Members(); gm.Status(); gm.Changed(); return gm.Err() },
		"GroupMember.Close":           func() error { return gm.Close(ctx) },
		"GroupMember.Close 2":         func() error { return gm.Close(ctx) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := callNoPanic(t, call)
			if strings.Contains(name, "Start") {
				assert.ErrorIs(t, err, ErrNilSession)
			}
			if err != nil {
				assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
			}
		})
	}
}
