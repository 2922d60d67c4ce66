package recipes_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Node data too large for the request that creates a node: past the
// server's jute.maxbuffer the server drops the connection, so the recipes
// refuse it before sending anything, at once even with
// context.Background(), and every other lease of the Session stays held.

// twoMiB is twice ZooKeeper's default jute.maxbuffer.
const twoMiB = 2 << 20

// tooLarge are node data sizes past the default jute.maxbuffer: one that
// go-zookeeper would send (and the server answer by dropping the
// connection), and one it cannot encode.
var tooLarge = []int{1200000, twoMiB}

// bystander is a Session holding a lease on another path, and watching its
// own state, while a recipe on the same Session is given data too large.
type bystander struct {
	cl    *client
	held  *zr.Lease
	state *states
}

func newBystander(t *testing.T) *bystander {
	t.Helper()
	cl := connect(t, server(t), nil)
	held, err := zr.NewMutex(cl.Session, testPath(t)+"-held").Acquire(ctxT(t, 20*time.Second))
	require.NoError(t, err)
	return &bystander{cl: cl, held: held, state: watchStates(t, cl.Session)}
}

// refuses runs call with context.Background() and asserts that it fails
// with ErrDataTooLarge, without waiting for anything: a call that hangs
// or retries fails the test (its goroutine ends when the test's Session
// closes), and undisturbed shows nothing reached the server. (No bound on
// its time: on a busy machine a refusal took 1.5s.)
func (b *bystander) refuses(t *testing.T, what string, call func(ctx context.Context) error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call(context.Background()) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, zr.ErrDataTooLarge, what)
		var e *zr.DataTooLargeError
		require.True(t, errors.As(err, &e), "%s: %v", what, err)
		assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: node data too large: "), err.Error())
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no answer after 20s with context.Background(): it must fail at once", what)
	}
}

// undisturbed asserts that nothing was created under path and that the
// Session and its other lease were not disturbed.
func (b *bystander) undisturbed(t *testing.T, path string) {
	t.Helper()
	ok, _, err := raw(t, server(t)).Exists(path)
	require.NoError(t, err)
	assert.False(t, ok, "no node at %s, not even a parent", path)
	select {
	case <-b.held.Done():
		t.Errorf("the other lease of the Session was lost: %v", b.held.Err())
	default:
	}
	assert.NoError(t, b.held.Err())
	select {
	case c := <-b.state.ch:
		t.Errorf("the Session's connection changed state: %v (%v)", c.State, c.Err)
	default:
	}
	assert.Equal(t, zr.StateConnected, b.cl.State())
	ctx := ctxT(t, 20*time.Second)
	l, err := zr.NewMutex(b.cl.Session, path+"-after").Acquire(ctx)
	require.NoError(t, err, "the Session still works")
	require.NoError(t, l.Release(ctx))
	require.NoError(t, b.held.Release(ctx))
}

func TestDataTooLarge_MutexFailsAtOnceAndDisturbsNoLease(t *testing.T) {
	b := newBystander(t)
	path := testPath(t)
	for _, n := range tooLarge {
		m := zr.NewMutex(b.cl.Session, path, zr.WithNodeData(make([]byte, n)))
		b.refuses(t, "Acquire", func(ctx context.Context) error { _, err := m.Acquire(ctx); return err })
		b.refuses(t, "TryAcquire", func(ctx context.Context) error { _, err := m.TryAcquire(ctx); return err })
		ml := zr.NewMultiLock(zr.NewMutex(b.cl.Session, path+"/first"), m)
		b.refuses(t, "MultiLock.Acquire", func(ctx context.Context) error { _, err := ml.Acquire(ctx); return err })
	}
	b.undisturbed(t, path)
}

func TestDataTooLarge_SemaphoreFailsAtOnceAndDisturbsNoLease(t *testing.T) {
	b := newBystander(t)
	path := testPath(t)
	for _, n := range tooLarge {
		sem := zr.NewSemaphore(b.cl.Session, path, 3, zr.WithNodeData(make([]byte, n)))
		b.refuses(t, "Acquire(1)", func(ctx context.Context) error { _, err := sem.Acquire(ctx, 1); return err })
		b.refuses(t, "Acquire(2)", func(ctx context.Context) error { _, err := sem.Acquire(ctx, 2); return err })
		b.refuses(t, "TryAcquire(1)", func(ctx context.Context) error { _, err := sem.TryAcquire(ctx, 1); return err })
		counted := zr.NewSemaphore(b.cl.Session, path, 3, zr.WithNodeData(make([]byte, n)), zr.WithSharedCount(path+"/count"))
		b.refuses(t, "Acquire with a shared count", func(ctx context.Context) error { _, err := counted.Acquire(ctx, 1); return err })
		sm := zr.NewSemaphoreMutex(b.cl.Session, path, zr.WithNodeData(make([]byte, n)))
		b.refuses(t, "SemaphoreMutex.Acquire", func(ctx context.Context) error { _, err := sm.Acquire(ctx); return err })
	}
	b.undisturbed(t, path)
}

func TestDataTooLarge_RWMutexFailsAtOnceAndDisturbsNoLease(t *testing.T) {
	b := newBystander(t)
	path := testPath(t)
	for _, n := range tooLarge {
		rw := zr.NewRWMutex(b.cl.Session, path, zr.WithNodeData(make([]byte, n)))
		b.refuses(t, "WriteLock.Acquire", func(ctx context.Context) error { _, err := rw.WriteLock().Acquire(ctx); return err })
		b.refuses(t, "ReadLock.Acquire", func(ctx context.Context) error { _, err := rw.ReadLock().Acquire(ctx); return err })
		b.refuses(t, "ReadLock.TryAcquire", func(ctx context.Context) error { _, err := rw.ReadLock().TryAcquire(ctx); return err })
	}
	b.undisturbed(t, path)
}

func TestDataTooLarge_ElectionFailsAtOnceAndDisturbsNoLease(t *testing.T) {
	b := newBystander(t)
	path := testPath(t)
	for _, n := range tooLarge {
		for _, layout := range []zr.ElectionLayout{zr.LatchLayout, zr.SelectorLayout} {
			e := zr.NewElection(b.cl.Session, path, zr.WithParticipantID(strings.Repeat("x", n)), zr.WithLayout(layout))
			b.refuses(t, layout.String()+" Campaign", func(ctx context.Context) error { _, err := e.Campaign(ctx); return err })
			b.refuses(t, layout.String()+" Run", func(ctx context.Context) error {
				return e.Run(ctx, func(context.Context, *zr.Lease) error { return nil }, zr.WithRequeue(true))
			})
		}
	}
	b.undisturbed(t, path)
}

// The keepers refuse data too large as the locks do, at once and without
// retrying it: PersistentNode and GroupMember from Start (nothing is
// created, not even a parent), discovery from Register; and once their
// node is in place, from SetData, Register again and Update, the node
// keeping its data and staying in place. No write reaches the server, so
// the Session's other lease stays held and its connection undisturbed.
func TestDataTooLarge_KeepersFailAtOnceAndDisturbNoLease(t *testing.T) {
	b := newBystander(t)
	s := b.cl.Session
	path := testPath(t)
	kept := path + "-kept"
	ctx := ctxT(t, time.Minute)
	modes := []zr.CreateMode{zr.ModeEphemeral, zr.ModeEphemeralSequential, zr.ModePersistent, zr.ModePersistentSequential}

	// In place with small data, before any data too large is tried.
	small := []byte("small")
	var nodes []*zr.PersistentNode
	for _, m := range modes {
		n := zr.NewPersistentNode(s, kept+"/"+m.String(), small, zr.WithCreateMode(m))
		require.NoError(t, n.Start(ctx))
		require.NoError(t, n.WaitInPlace(ctx))
		nodes = append(nodes, n)
	}
	g := zr.NewGroupMember(s, kept+"/group", "m", small)
	require.NoError(t, g.Start(ctx))
	require.NoError(t, g.WaitInPlace(ctx))
	d := discovery.New(s, kept+"/services")
	inst := discovery.Instance{Name: "svc", ID: "i", Address: "127.0.0.1", Port: 80}
	require.NoError(t, d.Register(ctx, inst))

	for _, size := range tooLarge {
		big := make([]byte, size)
		bigInst := discovery.Instance{Name: "svc", ID: "i", Address: strings.Repeat("a", size), Port: 80}
		for i, m := range modes {
			n := zr.NewPersistentNode(s, path+"/"+m.String(), big, zr.WithCreateMode(m))
			b.refuses(t, m.String()+" PersistentNode.Start", func(ctx context.Context) error {
				if err := n.Start(ctx); err != nil {
					return err
				}
				return n.WaitInPlace(ctx)
			})
			require.NoError(t, n.Close(ctx))
			b.refuses(t, m.String()+" PersistentNode.SetData", func(ctx context.Context) error { return nodes[i].SetData(ctx, big) })
		}
		gm := zr.NewGroupMember(s, path+"/group", "m", big)
		b.refuses(t, "GroupMember.Start", gm.Start)
		require.NoError(t, gm.Close(ctx))
		b.refuses(t, "GroupMember.SetData", func(ctx context.Context) error { return g.SetData(ctx, big) })
		b.refuses(t, "Register", func(ctx context.Context) error {
			return discovery.New(s, path+"/services").Register(ctx, discovery.Instance{Name: "svc", ID: "big", Address: bigInst.Address})
		})
		b.refuses(t, "Register of a registered instance", func(ctx context.Context) error { return d.Register(ctx, bigInst) })
		b.refuses(t, "Update", func(ctx context.Context) error { return d.Update(ctx, bigInst) })
	}

	// The kept nodes hold their data, in place.
	conn := raw(t, server(t))
	for _, n := range nodes {
		st, _ := n.Status()
		assert.True(t, st.InPlace, "%s stays in place", st.Path)
		assert.NoError(t, st.Err)
		data, _, err := conn.Get(st.Path)
		require.NoError(t, err)
		assert.Equal(t, small, data, "%s keeps its data", st.Path)
		assert.Equal(t, small, n.Data())
		require.NoError(t, n.Close(ctx))
	}
	data, _, err := conn.Get(kept + "/group/m")
	require.NoError(t, err)
	assert.Equal(t, small, data, "the group member keeps its data")
	require.NoError(t, g.Close(ctx))
	got, err := d.QueryForInstance(ctx, "svc", "i")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", got.Address, "the registration keeps its data")
	require.NoError(t, d.Close(ctx))
	b.undisturbed(t, path)
}

// The limit is not only safe but exact: the most data the error says fits
// is stored by a server at the default jute.maxbuffer, and one byte more is
// refused; a request just past jute.maxbuffer is dropped by that server
// (so the server of this run does have the default limit).
func TestDataTooLarge_TheMostThatFitsIsStoredByAServerAtTheDefaultLimit(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	ctx := ctxT(t, time.Minute)
	path := testPath(t)

	var e *zr.DataTooLargeError
	_, err := zr.NewMutex(cl.Session, path, zr.WithNodeData(make([]byte, twoMiB))).Acquire(ctx)
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, 1048575, e.Limit)
	_, err = zr.NewMutex(cl.Session, path, zr.WithNodeData(make([]byte, e.Max+1))).Acquire(ctx)
	require.ErrorIs(t, err, zr.ErrDataTooLarge, "one byte more than the most that fits")

	m := zr.NewMutex(cl.Session, path, zr.WithNodeData(make([]byte, e.Max)))
	l, err := m.Acquire(ctx)
	require.NoError(t, err, "the most that fits")
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Len(t, ps[0].Data, e.Max)
	require.NoError(t, l.Release(ctx))

	_, err = zr.NewElection(cl.Session, path+"-e", zr.WithParticipantID(strings.Repeat("x", twoMiB))).Campaign(ctx)
	require.True(t, errors.As(err, &e), "%v", err)
	el := zr.NewElection(cl.Session, path+"-e", zr.WithParticipantID(strings.Repeat("x", e.Max)))
	l, err = el.Campaign(ctx)
	require.NoError(t, err, "the longest participant id that fits")
	require.NoError(t, l.Release(ctx))

	// The premise: past jute.maxbuffer (1048575 bytes after the length),
	// the server drops the connection. A plain create with the
	// world:anyone ACL sends its path and data and 47 bytes more.
	conn, _, err := zktestConnect(c)
	require.NoError(t, err)
	defer conn.Close()
	over := path + "-raw"
	_, err = conn.Create(over, make([]byte, 1048576-len(over)-47), 0, worldACL())
	require.Error(t, err, "a request one byte past jute.maxbuffer")
	assert.ErrorIs(t, err, zk.ErrConnectionClosed)
}

// serverJVMFlags are zktest's own test flags and a jute.maxbuffer of
// 1.5 MiB, the most go-zookeeper sends.
var serverJVMFlags = []string{"-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
	"-Djute.maxbuffer=1572864"}

// A Session with a raised limit stores data above the default on servers
// that run with a larger jute.maxbuffer; a Session at the default limit
// refuses it there too.
func TestDataTooLarge_RaisedLimitWithALargerJuteMaxbuffer(t *testing.T) {
	c := zktest.Start(t, zktest.WithJVMFlags(serverJVMFlags...))
	if c.Backend() == zktest.BackendServers {
		msg := "starts a server with -Djute.maxbuffer, which ZK_SERVERS cannot; the java and docker backends run it"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx := ctxT(t, time.Minute)
	path := testPath(t)
	data := make([]byte, 1400000)
	for i := range data {
		data[i] = byte(i)
	}

	def := connect(t, c, nil)
	_, err := zr.NewMutex(def.Session, path, zr.WithNodeData(data)).Acquire(ctx)
	require.ErrorIs(t, err, zr.ErrDataTooLarge, "the default limit, whatever the server's")

	big := connect(t, c, nil, zr.WithMaxRequestSize(1572864))
	m := zr.NewMutex(big.Session, path, zr.WithNodeData(data))
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, data, ps[0].Data)
	ls, err := zr.NewSemaphore(big.Session, path+"-sem", 2, zr.WithNodeData(data)).Acquire(ctx, 2)
	require.NoError(t, err)
	for _, x := range ls {
		require.NoError(t, x.Release(ctx))
	}
	require.NoError(t, l.Release(ctx))
	assert.Equal(t, zr.StateConnected, big.State())

	var e *zr.DataTooLargeError
	_, err = zr.NewMutex(big.Session, path, zr.WithNodeData(make([]byte, twoMiB))).Acquire(ctx)
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, 1572860, e.Limit, "capped at the most go-zookeeper sends")
}
