package secure_test

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
)

// Every recipe creates its nodes (parents included) with the Session's
// ACL (WithACL): with sasl:alice only, a Session authenticated as bob can
// neither read them nor join the recipe.
func TestEveryRecipeCreatesItsNodesWithTheSessionACL(t *testing.T) {
	srv := enforced.get(t)
	aliceACL := []zr.ACL{zr.SASLACL("alice", zr.PermAll)}
	a := connect(t, srv.Addr, alice(), zr.WithACL(aliceACL))
	b := connect(t, srv.Addr, bob())
	type recipe struct {
		name string
		use  func(ctx context.Context, s *zr.Session, dir string) (cleanup func(), err error)
		// join is how bob tries to take part (default: use). A
		// registration is kept being made until it is in place, so bob's
		// discovery reads instead.
		join func(ctx context.Context, s *zr.Session, dir string) error
	}
	lease := func(l *zr.Lease, err error) (func(), error) {
		if err != nil {
			return nil, err
		}
		return func() { _ = l.Release(context.Background()) }, nil
	}
	recipes := []recipe{
		{name: "Mutex", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			return lease(zr.NewMutex(s, dir).Acquire(ctx))
		}},
		{name: "RWMutex", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			return lease(zr.NewRWMutex(s, dir).ReadLock().Acquire(ctx))
		}},
		{name: "Semaphore", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			ls, err := zr.NewSemaphore(s, dir, 2).Acquire(ctx, 1)
			if err != nil {
				return nil, err
			}
			return lease(ls[0], nil)
		}},
		{name: "Election", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			return lease(zr.NewElection(s, dir).Campaign(ctx))
		}},
		{name: "SharedValue", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			_, err := zr.NewSharedValue(s, dir+"/v", []byte("x")).Set(ctx, []byte("y"))
			return func() {}, err
		}},
		{name: "AtomicCounter", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			_, err := zr.NewAtomicCounter(s, dir+"/n").Increment(ctx)
			return func() {}, err
		}},
		{name: "Queue", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			return func() {}, zr.NewQueue(s, dir).Offer(ctx, []byte("item"))
		}},
		{name: "Barrier", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			return func() {}, zr.NewBarrier(s, dir+"/b").Set(ctx)
		}},
		{name: "Discovery", use: func(ctx context.Context, s *zr.Session, dir string) (func(), error) {
			d := discovery.New(s, dir)
			err := d.Register(ctx, discovery.Instance{Name: "api", ID: "i1", Address: "127.0.0.1", Port: 1})
			return func() { _ = d.Close(context.Background()) }, err
		}, join: func(ctx context.Context, s *zr.Session, dir string) error {
			_, err := discovery.New(s, dir).QueryForInstances(ctx, "api")
			return err
		}},
	}
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			dir := "/acl-" + unsafe.ReplaceAllString(t.Name(), "_") + "/sub/dir"
			cleanup, err := r.use(ctx, a, dir)
			require.NoError(t, err)
			defer cleanup()

			nodes := walk(t, a.Conn(), "/"+path.Join(dir, "..", "..")[1:])
			require.Greater(t, len(nodes), 3, "the recipe made nodes: %v", nodes)
			for _, p := range nodes {
				acl, _, err := a.Conn().GetACL(p)
				require.NoError(t, err, p)
				require.Equal(t, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "alice"}}, acl, "ACL of %s", p)
				_, _, err = b.Conn().Get(p)
				require.ErrorIs(t, err, zk.ErrNoAuth, p)
			}
			// bob cannot join the recipe either.
			if r.join != nil {
				err = r.join(ctx, b, dir)
			} else {
				var bcleanup func()
				if bcleanup, err = r.use(ctx, b, dir); err == nil {
					bcleanup()
				}
			}
			require.ErrorIs(t, err, zk.ErrNoAuth)
		})
	}
}

// walk lists p and every node under it.
func walk(t *testing.T, c *zk.Conn, p string) []string {
	t.Helper()
	out := []string{p}
	kids, _, err := c.Children(p)
	require.NoError(t, err, p)
	for _, k := range kids {
		out = append(out, walk(t, c, path.Join(p, k))...)
	}
	return out
}
