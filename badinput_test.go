package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// badCall is one misuse of the public API and the error it must give:
// typed (errors.Is), prefixed "zkrecipes:", returned before any ZooKeeper
// call, and never a panic or a hang.
type badCall struct {
	name string
	call func(ctx context.Context) error
	want error
}

// badPaths are the recipe paths every constructor must refuse.
var badPaths = map[string]string{
	"empty":          "",
	"relative":       "locks/a",
	"trailing slash": "/locks/a/",
	"root":           "/",
	"empty segment":  "/locks//a",
	"dot segment":    "/locks/./a",
	"reserved tree":  "/zookeeper/quota",
	"reserved root":  "/zookeeper",
	"control char":   "/locks/a\x01",
}

// recipeRows returns, for one recipe constructor, a row per bad path, for
// a nil session and for a nil option, each run through every method. A
// new recipe adds itself to badRecipes below.
type recipeUnderTest struct {
	name    string
	methods func(s *Session, path string, nilOpt bool) map[string]func(ctx context.Context) error
}

var badRecipes = []recipeUnderTest{
	{"Mutex", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []LockOption
		if nilOpt {
			opts = append(opts, nil)
		}
		m := NewMutex(s, path, opts...)
		return map[string]func(context.Context) error{
			"Acquire":      func(ctx context.Context) error { _, err := m.Acquire(ctx); return err },
			"TryAcquire":   func(ctx context.Context) error { _, err := m.TryAcquire(ctx); return err },
			"Participants": func(ctx context.Context) error { _, err := m.Participants(ctx); return err },
		}
	}},
	{"RWMutex", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []LockOption
		if nilOpt {
			opts = append(opts, nil)
		}
		rw := NewRWMutex(s, path, opts...)
		return map[string]func(context.Context) error{
			"WriteLock.Acquire":    func(ctx context.Context) error { _, err := rw.WriteLock().Acquire(ctx); return err },
			"WriteLock.TryAcquire": func(ctx context.Context) error { _, err := rw.WriteLock().TryAcquire(ctx); return err },
			"ReadLock.Acquire":     func(ctx context.Context) error { _, err := rw.ReadLock().Acquire(ctx); return err },
			"ReadLock.TryAcquire":  func(ctx context.Context) error { _, err := rw.ReadLock().TryAcquire(ctx); return err },
		}
	}},
	{"Election", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []ElectionOption
		if nilOpt {
			opts = append(opts, nil)
		}
		e := NewElection(s, path, opts...)
		return map[string]func(context.Context) error{
			"Campaign":     func(ctx context.Context) error { _, err := e.Campaign(ctx); return err },
			"Resign":       func(ctx context.Context) error { return e.Resign(ctx) },
			"Leader":       func(ctx context.Context) error { _, err := e.Leader(ctx); return err },
			"Participants": func(ctx context.Context) error { _, err := e.Participants(ctx); return err },
			"Subscribe":    func(ctx context.Context) error { _, err := e.Subscribe(ctx); return err },
			"Proclaim":     func(ctx context.Context) error { return e.Proclaim(ctx, nil, nil) },
			"Run": func(ctx context.Context) error {
				return e.Run(ctx, func(context.Context, *Lease) error { return nil })
			},
		}
	}},
	{"Semaphore", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []SemaphoreOption
		if nilOpt {
			opts = append(opts, nil)
		}
		sem := NewSemaphore(s, path, 2, opts...)
		return map[string]func(context.Context) error{
			"Acquire":      func(ctx context.Context) error { _, err := sem.Acquire(ctx, 1); return err },
			"TryAcquire":   func(ctx context.Context) error { _, err := sem.TryAcquire(ctx, 1); return err },
			"Participants": func(ctx context.Context) error { _, err := sem.Participants(ctx); return err },
			"Available":    func(ctx context.Context) error { _, err := sem.Available(ctx); return err },
		}
	}},
	{"SemaphoreMutex", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []LockOption
		if nilOpt {
			opts = append(opts, nil)
		}
		m := NewSemaphoreMutex(s, path, opts...)
		return map[string]func(context.Context) error{
			"Acquire":    func(ctx context.Context) error { _, err := m.Acquire(ctx); return err },
			"TryAcquire": func(ctx context.Context) error { _, err := m.TryAcquire(ctx); return err },
		}
	}},
	{"MultiLock", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []LockOption
		if nilOpt {
			opts = append(opts, nil)
		}
		ml := NewMultiLock(NewMutex(s, path, opts...), NewMutex(s, path+"-b", opts...))
		return map[string]func(context.Context) error{
			"Acquire":    func(ctx context.Context) error { _, err := ml.Acquire(ctx); return err },
			"TryAcquire": func(ctx context.Context) error { _, err := ml.TryAcquire(ctx); return err },
		}
	}},
	{"TreeCache", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []TreeCacheOption
		if nilOpt {
			opts = append(opts, nil)
		}
		c := NewTreeCache(s, path, opts...)
		return map[string]func(context.Context) error{
			"Start": func(ctx context.Context) error { return c.Start(ctx) },
		}
	}},
}

// The keepers (PersistentNode, GroupMember): their calls that take a
// context; Start, which starts a goroutine on a valid input, has rows of
// its own in badInputTable.
var badKeepers = []recipeUnderTest{
	{"PersistentNode", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		var opts []PersistentNodeOption
		if nilOpt {
			opts = append(opts, nil)
		}
		n := NewPersistentNode(s, path, nil, opts...)
		return map[string]func(context.Context) error{
			"WaitInPlace": func(ctx context.Context) error { return n.WaitInPlace(ctx) },
			"SetData":     func(ctx context.Context) error { return n.SetData(ctx, []byte("x")) },
		}
	}},
	{"GroupMember", func(s *Session, path string, nilOpt bool) map[string]func(context.Context) error {
		if nilOpt {
			return nil // no options
		}
		g := NewGroupMember(s, path, "me", nil)
		return map[string]func(context.Context) error{
			"Start":       func(ctx context.Context) error { return g.Start(ctx) },
			"WaitInPlace": func(ctx context.Context) error { return g.WaitInPlace(ctx) },
			"SetData":     func(ctx context.Context) error { return g.SetData(ctx, []byte("x")) },
		}
	}},
}

func init() { badRecipes = append(badRecipes, badKeepers...) }

func badInputTable() []badCall {
	var rows []badCall
	unused := &Session{} // never reached: validation comes first
	for _, r := range badRecipes {
		for why, p := range badPaths {
			for m, f := range r.methods(unused, p, false) {
				rows = append(rows, badCall{fmt.Sprintf("%s(%s path).%s", r.name, why, m), f, ErrInvalidPath})
			}
		}
		for m, f := range r.methods(nil, "/a", false) {
			rows = append(rows, badCall{fmt.Sprintf("%s(nil session).%s", r.name, m), f, ErrNilSession})
		}
		for m, f := range r.methods(unused, "/a", true) {
			rows = append(rows, badCall{fmt.Sprintf("%s(nil option).%s", r.name, m), f, ErrInvalidArgument})
		}
	}
	servers := []string{"127.0.0.1:1"} // never dialled: validation comes first
	connectWith := func(opts ...SessionOption) func(context.Context) error {
		return func(ctx context.Context) error { _, err := Connect(ctx, servers, opts...); return err }
	}
	for name, opt := range map[string]SessionOption{
		"zero session timeout":      WithSessionTimeout(0),
		"negative session timeout":  WithSessionTimeout(-time.Second),
		"nil retry policy":          WithRetryPolicy(nil),
		"zero backoff":              WithRetryPolicy(ExponentialBackoff(0, 0)),
		"negative backoff":          WithRetryPolicy(ExponentialBackoff(-time.Second, time.Second)),
		"backoff max below initial": WithRetryPolicy(ExponentialBackoff(time.Second, time.Millisecond)),
		"negative bounded elapsed":  WithRetryPolicy(BoundedExponentialBackoff(time.Millisecond, time.Second, -time.Second)),
		"negative retry count":      WithRetryPolicy(RetryNTimes(-1, time.Millisecond)),
		"zero retry interval":       WithRetryPolicy(RetryNTimes(3, 0)),
		"zero until-elapsed total":  WithRetryPolicy(RetryUntilElapsed(0, time.Millisecond)),
		"negative until interval":   WithRetryPolicy(RetryUntilElapsed(time.Second, -time.Millisecond)),
		"zero forever interval":     WithRetryPolicy(RetryForever(0)),
		"empty ACL":                 WithACL(nil),
		"empty digest user":         WithDigestAuth("", "pw"),
		"unknown loss policy":       WithLossPolicy(LossPolicy(9)),
		"nil logger":                WithLogger(nil),
		"nil tracer":                WithTracer(nil),
		"nil dialer":                WithDialer(nil),
		"nil option":                nil,
	} {
		rows = append(rows, badCall{"Connect(" + name + ")", connectWith(opt), ErrInvalidArgument})
	}
	for _, ns := range []string{"app/", "/", "a//b", "zookeeper", "../x", "/zookeeper/x"} {
		rows = append(rows, badCall{fmt.Sprintf("Connect(namespace %q)", ns), connectWith(WithNamespace(ns)), ErrInvalidPath})
	}
	for _, s := range [][]string{nil, {}, {""}, {"host with space:2181"}, {"127.0.0.1:2181/chroot"}} {
		rows = append(rows, badCall{fmt.Sprintf("Connect(servers %q)", s),
			func(ctx context.Context) error { _, err := Connect(ctx, s); return err }, ErrInvalidArgument})
	}
	rows = append(rows,
		badCall{"NewSession(nil conn)", func(ctx context.Context) error { _, err := NewSession(ctx, nil, nil); return err }, ErrInvalidArgument},
		badCall{"Semaphore(max 0)", func(ctx context.Context) error { _, err := NewSemaphore(unused, "/a", 0).Acquire(ctx, 1); return err }, ErrInvalidArgument},
		badCall{"Semaphore(max -1)", func(ctx context.Context) error { _, err := NewSemaphore(unused, "/a", -1).Acquire(ctx, 1); return err }, ErrInvalidArgument},
		badCall{"Semaphore.Acquire(0)", func(ctx context.Context) error { _, err := NewSemaphore(unused, "/a", 2).Acquire(ctx, 0); return err }, ErrInvalidArgument},
		badCall{"Semaphore.Acquire(-1)", func(ctx context.Context) error { _, err := NewSemaphore(unused, "/a", 2).Acquire(ctx, -1); return err }, ErrInvalidArgument},
		badCall{"Semaphore.Acquire(above max)", func(ctx context.Context) error { _, err := NewSemaphore(unused, "/a", 2).Acquire(ctx, 3); return err }, ErrInvalidArgument},
		badCall{"Semaphore.TryAcquire(0)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 2).TryAcquire(ctx, 0)
			return err
		}, ErrInvalidArgument},
		badCall{"Semaphore(empty shared count path)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 2, WithSharedCount("")).Acquire(ctx, 1)
			return err
		}, ErrInvalidArgument},
		badCall{"Semaphore(relative shared count path)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 2, WithSharedCount("count")).Acquire(ctx, 1)
			return err
		}, ErrInvalidPath},
		badCall{"Semaphore(reserved shared count path)", func(ctx context.Context) error {
			_, err := NewSemaphore(unused, "/a", 2, WithSharedCount("/zookeeper/count")).Acquire(ctx, 1)
			return err
		}, ErrInvalidPath},
		badCall{"PersistentNode(nil session).Start", func(ctx context.Context) error { return NewPersistentNode(nil, "/a", nil).Start(ctx) }, ErrNilSession},
		badCall{"PersistentNode(root).Start", func(ctx context.Context) error { return NewPersistentNode(unused, "/", nil).Start(ctx) }, ErrInvalidPath},
		badCall{"PersistentNode(unknown mode).Start", func(ctx context.Context) error {
			return NewPersistentNode(unused, "/a", nil, WithCreateMode(CreateMode(9))).Start(ctx)
		}, ErrInvalidArgument},
		badCall{"GroupMember(empty id)", func(ctx context.Context) error { return NewGroupMember(unused, "/a", "", nil).Start(ctx) }, ErrInvalidArgument},
		badCall{"GroupMember(id with slash)", func(ctx context.Context) error { return NewGroupMember(unused, "/a", "x/y", nil).Start(ctx) }, ErrInvalidArgument},
		badCall{"GroupMember(id ..)", func(ctx context.Context) error { return NewGroupMember(unused, "/a", "..", nil).Start(ctx) }, ErrInvalidArgument},
		badCall{"MultiLock(no locks)", func(ctx context.Context) error { _, err := NewMultiLock().Acquire(ctx); return err }, ErrInvalidArgument},
		badCall{"MultiLock(nil lock)", func(ctx context.Context) error { _, err := NewMultiLock(nil).Acquire(ctx); return err }, ErrInvalidArgument},
		badCall{"MultiLock(typed nil lock)", func(ctx context.Context) error {
			var m *Mutex
			_, err := NewMultiLock(m).TryAcquire(ctx)
			return err
		}, ErrInvalidArgument},
		badCall{"Election(unknown layout)", func(ctx context.Context) error {
			_, err := NewElection(unused, "/a", WithLayout(ElectionLayout(42))).Campaign(ctx)
			return err
		}, ErrInvalidArgument},
	)
	return rows
}

func TestEveryPublicCallRejectsBadInputWithATypedError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, row := range badInputTable() {
		t.Run(row.name, func(t *testing.T) {
			err := callNoPanic(t, func() error { return row.call(ctx) })
			assert.ErrorIs(t, err, row.want)
			if err != nil {
				assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
			}
		})
	}
}

// TestNilContextIsAnErrorNotAPanic calls every ctx-taking entry point with
// a nil context.
func TestNilContextIsAnErrorNotAPanic(t *testing.T) {
	unused := &Session{}
	var nilCtx context.Context
	calls := map[string]func() error{
		"Connect":    func() error { _, err := Connect(nilCtx, []string{"127.0.0.1:1"}); return err },
		"NewSession": func() error { _, err := NewSession(nilCtx, nil, nil); return err },
	}
	for _, r := range badRecipes {
		for m, f := range r.methods(unused, "/a", false) {
			calls[r.name+"."+m] = func() error { return f(nilCtx) }
		}
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, callNoPanic(t, call), ErrInvalidArgument)
		})
	}
}

// callNoPanic turns a panic into a test failure with the call's name.
func callNoPanic(t *testing.T, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("panic: %v", r)
			err = errors.New("panicked")
		}
	}()
	return f()
}
