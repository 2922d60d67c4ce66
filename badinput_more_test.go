package zkrecipes

import (
	"context"
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
	return []badCall{
		{"DoubleBarrier(n 0).Enter", func(ctx context.Context) error { return NewDoubleBarrier(unused, "/a", 0).Enter(ctx) }, ErrInvalidArgument},
		{"DoubleBarrier(n -1).Enter", func(ctx context.Context) error { return NewDoubleBarrier(unused, "/a", -1).Enter(ctx) }, ErrInvalidArgument},
		{"DoubleBarrier(n 0).Leave", func(ctx context.Context) error { return NewDoubleBarrier(unused, "/a", 0).Leave(ctx) }, ErrInvalidArgument},
		{"TreeCache(max depth -2).Start", func(ctx context.Context) error {
			return NewTreeCache(unused, "/a", WithMaxDepth(-2)).Start(ctx)
		}, ErrInvalidArgument},
		{"Semaphore.Available(max 0)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 0).Available(ctx)
			return err
		}, ErrInvalidArgument},
		{"Semaphore.Participants(max -1)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", -1).Participants(ctx)
			return err
		}, ErrInvalidArgument},
		{"Semaphore(max 2^30).Acquire(2^30)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 1<<30).Acquire(ctx, 1<<30)
			return err
		}, ErrInvalidArgument},
		{"Semaphore(max 2^30).TryAcquire(17476)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 1<<30).TryAcquire(ctx, 17476)
			return err
		}, ErrInvalidArgument},
		{"Semaphore(shared count).Acquire(2^30)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 1, WithSharedCount("/c")).Acquire(ctx, 1<<30)
			return err
		}, ErrInvalidArgument},
		{"Connect(session timeout 999µs)", connectWithTimeout(999 * time.Microsecond), ErrInvalidArgument},
		{"Connect(session timeout 2^31 ms)", connectWithTimeout(1 << 31 * time.Millisecond), ErrInvalidArgument},
		{"Connect(1.1 MB namespace)", connectWith(WithNamespace(strings.Repeat("x", len(huge)))), ErrInvalidPath},
		{"Connect(1.1 MB ACL id)", connectWith(WithACL([]ACL{DigestACL(strings.Repeat("x", len(huge)), "p", PermAll)})), ErrInvalidArgument},
		{"Connect(1.1 MB digest password)", connectWith(WithDigestAuth("u", strings.Repeat("x", len(huge)))), ErrInvalidArgument},
		{"Election.Proclaim(nil lease)", func(ctx context.Context) error {
			return NewElection(unused, "/a", WithProclaim(true)).Proclaim(ctx, nil, []byte("x"))
		}, ErrInvalidArgument},
		{"Election.Proclaim(zero lease)", func(ctx context.Context) error {
			return NewElection(unused, "/a", WithProclaim(true)).Proclaim(ctx, &Lease{}, []byte("x"))
		}, ErrInvalidArgument},
		{"Barrier(1.1 MB data).Set", func(ctx context.Context) error { return NewBarrier(unused, "/a", WithBarrierData(huge)).Set(ctx) }, ErrDataTooLarge},
		{"Barrier(nil option, bad path).Set", func(ctx context.Context) error { return NewBarrier(unused, "a", nil).Set(ctx) }, ErrInvalidArgument},
		{"Revoke(the lock's path, not a node in it)", func(ctx context.Context) error { return Revoke(ctx, unused, "/locks/a") }, ErrInvalidArgument},
		{"Revoke(a group member's node)", func(ctx context.Context) error { return Revoke(ctx, unused, "/group/member-1") }, ErrInvalidArgument},
		{"NodeCache(1.1 MB path).Start", func(ctx context.Context) error {
			return NewNodeCache(unused, "/"+strings.Repeat("x", len(huge))).Start(ctx)
		}, ErrInvalidPath},
		{"WatchChildren(1.1 MB path)", func(ctx context.Context) error {
			return WatchChildren(ctx, unused, "/a/"+strings.Repeat("x", len(huge)), func([]string, *NodeStat) error { return nil })
		}, ErrInvalidPath},
		{"Queue.Offer(1.1 MB)", func(ctx context.Context) error { return NewQueue(unused, "/a").Offer(ctx, huge) }, ErrDataTooLarge},
		{"PersistentNode(mode -1).Start", func(ctx context.Context) error {
			return NewPersistentNode(unused, "/a", nil, WithCreateMode(CreateMode(-1))).Start(ctx)
		}, ErrInvalidArgument},
		{"PersistentNode(nil option).Start", func(ctx context.Context) error { return NewPersistentNode(unused, "/a", nil, nil).Start(ctx) }, ErrInvalidArgument},
		{"GroupMember(id with control char).Start", func(ctx context.Context) error {
			return NewGroupMember(unused, "/a", "m\x01", nil).Start(ctx)
		}, ErrInvalidArgument},
		{"GroupMember(id .).Start", func(ctx context.Context) error { return NewGroupMember(unused, "/a", ".", nil).Start(ctx) }, ErrInvalidArgument},
	}
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

// connectWithTimeout connects, to an address never dialled, with the
// session timeout d.
func connectWithTimeout(d time.Duration) func(context.Context) error {
	return connectWith(WithSessionTimeout(d))
}

// connectWith connects, to an address never dialled, with opt.
func connectWith(opt SessionOption) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := Connect(ctx, []string{"127.0.0.1:1"}, opt)
		return err
	}
}

// TestInvalidRecipesCloseAndReadWithoutPanic: the calls that return no
// error (Close, Get, Events, Err, Status) on a recipe made with bad input
// neither panic nor block, and a Start after Close still reports the
// input error.
func TestInvalidRecipesCloseAndReadWithoutPanic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc := NewNodeCache(nil, "/a")
	tc := NewTreeCache(&Session{}, "rel")
	pn := NewPersistentNode(nil, "/a", nil)
	gm := NewGroupMember(&Session{}, "/a", "", nil)
	calls := []struct {
		name string
		call func() error
	}{ // in this order
		{"NodeCache.Get", func() error { nc.Get(); nc.Events(); return nc.Err() }},
		{"NodeCache.Close", func() error { return nc.Close(ctx) }},
		{"NodeCache.Close again", func() error { return nc.Close(ctx) }},
		{"NodeCache.Start after Close", func() error { return nc.Start(ctx) }},
		{"TreeCache.Get", func() error { tc.Get("/x"); tc.Children("rel"); tc.Snapshot(); tc.Len(); return nil }},
		{"TreeCache.Close", func() error { return tc.Close(ctx) }},
		{"TreeCache.Close again", func() error { return tc.Close(ctx) }},
		{"PersistentNode.Status", func() error { pn.Status(); pn.Data(); return nil }},
		{"PersistentNode.Close", func() error { return pn.Close(ctx) }},
		{"PersistentNode.Close again", func() error { return pn.Close(ctx) }},
		{"GroupMember.Members", func() error { gm.Members(); gm.Status(); return gm.Err() }},
		{"GroupMember.Close", func() error { return gm.Close(ctx) }},
		{"GroupMember.Close again", func() error { return gm.Close(ctx) }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := callNoPanic(t, c.call)
			if strings.Contains(c.name, "Start") {
				assert.ErrorIs(t, err, ErrNilSession)
			}
			if err != nil {
				assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
			}
		})
	}
}

// TestCountersRefuseANilContext: every method of the shared values and
// counters (counter_badinput_test.go checks their paths and sessions).
func TestCountersRefuseANilContext(t *testing.T) {
	var nilCtx context.Context
	for name, f := range counterMethods(&Session{}, "/a") {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, callNoPanic(t, func() error { return f(nilCtx) }), ErrInvalidArgument)
		})
	}
}
