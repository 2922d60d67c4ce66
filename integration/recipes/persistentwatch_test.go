package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/wire"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

// ev is a WatchEvent as the tests compare it: "KIND path" (RESET:reason
// for WatchReset).
func ev(e zr.WatchEvent) string {
	if e.Kind == zr.WatchReset {
		return "RESET:" + e.Reset.String()
	}
	return e.Kind.String() + " " + e.Path
}

// nextEvents takes n events from w, failing after timeout.
func nextEvents(t *testing.T, w *zr.PersistentWatch, n int, timeout time.Duration) []string {
	t.Helper()
	var got []string
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case e, ok := <-w.Events():
			require.True(t, ok, "events closed after %v (Err %v)", got, w.Err())
			got = append(got, ev(e))
		case <-deadline:
			t.Fatalf("only %d of %d events within %v: %v", len(got), n, timeout, got)
		}
	}
	return got
}

// noEvent checks that w delivers nothing for a while.
func noEvent(t *testing.T, w *zr.PersistentWatch, d time.Duration) {
	t.Helper()
	select {
	case e, ok := <-w.Events():
		if ok {
			t.Fatalf("unexpected event %s", ev(e))
		}
	case <-time.After(d):
	}
}

// freshPath makes sure p does not exist and its parent does.
func freshPath(t *testing.T, conn *zk.Conn, p string) string {
	t.Helper()
	require.NoError(t, deleteTree(conn, p))
	mkdirs(t, conn, p[:strings.LastIndex(p, "/")])
	return p
}

func startWatch(t *testing.T, s *zr.Session, path string, opts ...zr.PersistentWatchOption) *zr.PersistentWatch {
	t.Helper()
	if wireOff() {
		t.Skip("persistent watches need the wire layer")
	}
	w := zr.NewPersistentWatch(s, path, opts...)
	t.Cleanup(func() { _ = w.Close(context.Background()) }) // also after a failed Start
	require.NoError(t, w.Start(ctxT(t, 20*time.Second)))
	return w
}

func TestPersistentWatchDeliversEveryChangeToItsNodeInOrder(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	other := raw(t, c)
	p := testPath(t)
	freshPath(t, other, p)
	w := startWatch(t, s.Session, p)

	_, err := other.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	for i := range 3 {
		_, err = other.Set(p, []byte(strconv.Itoa(i)), -1)
		require.NoError(t, err)
	}
	_, err = other.Create(p+"/kid", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = other.Set(p+"/kid", []byte("x"), -1) // below the node: not its change
	require.NoError(t, err)
	require.NoError(t, other.Delete(p+"/kid", -1))
	require.NoError(t, other.Delete(p, -1))

	assert.Equal(t, []string{
		"NODE_CREATED " + p,
		"DATA_CHANGED " + p, "DATA_CHANGED " + p, "DATA_CHANGED " + p,
		"CHILDREN_CHANGED " + p, "CHILDREN_CHANGED " + p,
		"NODE_DELETED " + p,
	}, nextEvents(t, w, 7, 10*time.Second))
	noEvent(t, w, 200*time.Millisecond)
}

func TestPersistentRecursiveWatchDeliversEveryChangeInItsSubtreeInOrder(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	other := raw(t, c)
	p := testPath(t)
	freshPath(t, other, p)
	require.NoError(t, deleteTree(other, p+"-sibling"))
	w := startWatch(t, s.Session, p, zr.WithRecursive(true))
	require.True(t, w.Recursive())

	var want []string
	mk := func(path string) {
		_, err := other.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		want = append(want, "NODE_CREATED "+path)
	}
	mk(p)
	deep := p
	for i := range 6 {
		deep = fmt.Sprintf("%s/d%d", deep, i)
		mk(deep)
	}
	_, err := other.Create(p+"-sibling", nil, 0, zk.WorldACL(zk.PermAll)) // shares the prefix, not the subtree
	require.NoError(t, err)
	for i := range 3 {
		_, err = other.Set(deep, []byte(strconv.Itoa(i)), -1)
		require.NoError(t, err)
		want = append(want, "DATA_CHANGED "+deep)
	}
	for path := deep; path != p; path = path[:strings.LastIndex(path, "/")] {
		require.NoError(t, other.Delete(path, -1))
		want = append(want, "NODE_DELETED "+path)
	}
	require.NoError(t, other.Delete(p, -1))
	want = append(want, "NODE_DELETED "+p)
	require.NoError(t, other.Delete(p+"-sibling", -1))

	assert.Equal(t, want, nextEvents(t, w, len(want), 10*time.Second))
	noEvent(t, w, 200*time.Millisecond)
}

func TestPersistentWatchWithoutTheWireLayerSaysUnsupported(t *testing.T) {
	c := server(t)
	off := connect(t, c, nil, zr.WithWireLayer(false))
	conn, events, err := zktestConnect(c)
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	adopted, err := zr.NewSession(ctxT(t, 10*time.Second), conn, events)
	require.NoError(t, err)
	t.Cleanup(func() { _ = adopted.Close() })
	for name, s := range map[string]*zr.Session{"WithWireLayer(false)": off.Session, "NewSession": adopted} {
		w := zr.NewPersistentWatch(s, testPath(t))
		err := w.Start(ctxT(t, 10*time.Second))
		require.ErrorIs(t, err, zr.ErrPersistentWatchUnsupported, name)
		assert.False(t, open(t, w.Events()), "events closed after a failed Start")
		require.NoError(t, w.Close(context.Background()))
	}
}

func TestPersistentWatchRequestsReachTheTracer(t *testing.T) {
	c := server(t)
	var mu sync.Mutex
	var ops []string
	s := connect(t, c, nil, zr.WithTracer(zr.TracerFunc(func(ev zr.TraceEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Err == nil && strings.HasSuffix(ev.Path, "/TestPersistentWatchRequestsReachTheTracer") {
			ops = append(ops, ev.Op)
		}
	})))
	w := startWatch(t, s.Session, testPath(t))
	require.NoError(t, w.Close(context.Background()))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"addWatch", "removeWatches"}, ops)
}

func TestSessionCloseWithAPersistentWatchOpenLeavesNoGoroutine(t *testing.T) {
	if wireOff() {
		t.Skip("persistent watches need the wire layer")
	}
	c := server(t)
	before := goleak.IgnoreCurrent()
	s := connect(t, c, nil)
	w := zr.NewPersistentWatch(s.Session, testPath(t), zr.WithRecursive(true))
	require.NoError(t, w.Start(ctxT(t, 10*time.Second)))
	require.NoError(t, s.Close())
	assert.False(t, open(t, w.Events()), "events closed with the Session")
	assert.ErrorIs(t, w.Err(), zr.ErrClosed)
	require.NoError(t, w.Close(context.Background()))
	goleak.VerifyNone(t, before)
}

// nextReset skips node events (of changes made around the fault) up to
// the next WatchReset and returns it.
func nextReset(t *testing.T, w *zr.PersistentWatch, timeout time.Duration) zr.WatchEvent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e, ok := <-w.Events():
			require.True(t, ok, "events closed (Err %v)", w.Err())
			if e.Kind == zr.WatchReset {
				return e
			}
		case <-deadline:
			t.Fatalf("no WatchReset within %v", timeout)
		}
	}
}

func TestPersistentWatchIsSetAgainAfterADroppedConnectionAndSaysEventsMayBeMissed(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	s := connect(t, c, []string{proxy.Addr()})
	other := raw(t, c)
	p := testPath(t)
	freshPath(t, other, p)
	w := startWatch(t, s.Session, p, zr.WithRecursive(true))
	mkdirs(t, other, p)
	assert.Equal(t, []string{"NODE_CREATED " + p}, nextEvents(t, w, 1, 10*time.Second))

	for i := range 3 {
		proxy.Blackhole()
		_, err := other.Create(fmt.Sprintf("%s/missed%d", p, i), nil, 0, zk.WorldACL(zk.PermAll)) // its notification is lost
		require.NoError(t, err)
		proxy.ResetAll()
		proxy.Heal()
		r := nextReset(t, w, 15*time.Second)
		assert.Equal(t, zr.ResetReconnected, r.Reset)
		assert.Equal(t, s.Conn().SessionID(), r.SessionID)
		assert.Equal(t, p, r.Path)
		_, err = other.Create(fmt.Sprintf("%s/after%d", p, i), nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		assert.Equal(t, []string{fmt.Sprintf("NODE_CREATED %s/after%d", p, i)}, nextEvents(t, w, 1, 10*time.Second))
	}
}

func TestPersistentWatchIsSetAgainInTheNewSessionAfterExpiry(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	other := raw(t, c)
	p := testPath(t)
	freshPath(t, other, p)
	mkdirs(t, other, p)
	w := startWatch(t, s.Session, p)
	old := s.Conn().SessionID()

	s.expire(t)
	r := nextReset(t, w, 20*time.Second)
	assert.Equal(t, zr.ResetNewSession, r.Reset)
	assert.NotEqual(t, old, r.SessionID)
	require.Eventually(t, func() bool { return s.Conn().SessionID() == r.SessionID }, 10*time.Second, 5*time.Millisecond)
	_, err := other.Set(p, []byte("x"), -1)
	require.NoError(t, err)
	assert.Equal(t, []string{"DATA_CHANGED " + p}, nextEvents(t, w, 1, 10*time.Second))
}

// sessionWatches returns the paths the server holds a watch on for session
// sid (the four-letter word wchc), sorted, but for the Session's own watch
// on the ensemble's configuration (zr.ConfigPath, WithEnsembleTracking).
func sessionWatches(t *testing.T, c *zktest.Cluster, sid int64) []string {
	t.Helper()
	out, err := zktest.FourLetterWord(ctxT(t, 10*time.Second), c.Servers()[0], "wchc")
	require.NoError(t, err)
	var paths []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "0x"):
			in = line == fmt.Sprintf("0x%x", sid)
		case in && strings.HasPrefix(line, "\t") && strings.TrimSpace(line) != zr.ConfigPath:
			paths = append(paths, strings.TrimSpace(line))
		}
	}
	slices.Sort(paths)
	return paths
}

// Beside another session that watches the same path (its data and its
// children), Close puts back the Session's own one-shot watches there and
// no other: on ZooKeeper 3.6 to 3.8 a probe of the server cannot tell them
// apart (ZOOKEEPER-4466), so the wire layer follows go-zookeeper's.
func TestPersistentWatchCloseLeavesTheSessionsOtherWatchesAsTheyWere(t *testing.T) {
	for _, tc := range []struct{ recursive, beside bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("recursive=%v,beside another session's=%v", tc.recursive, tc.beside), func(t *testing.T) {
			recursive := tc.recursive
			c := server(t)
			s := connect(t, c, nil)
			other := raw(t, c)
			p := testPath(t)
			freshPath(t, other, p)
			mkdirs(t, other, p+"/kid")
			sid := s.Conn().SessionID()
			if tc.beside {
				theirs := raw(t, c)
				_, _, _, err := theirs.GetW(p)
				require.NoError(t, err)
				_, _, _, err = theirs.ChildrenW(p)
				require.NoError(t, err)
			}
			// One-shot watches of the same Session: on the very path, and below it.
			_, _, same, err := s.Conn().GetW(p)
			require.NoError(t, err)
			_, _, below, err := s.Conn().GetW(p + "/kid")
			require.NoError(t, err)
			_, _, kids, err := s.Conn().ChildrenW(p + "/kid")
			require.NoError(t, err)
			before := sessionWatches(t, c, sid) // data and exists watches only
			require.Equal(t, []string{p, p + "/kid"}, before)
			count := mntrInt(t, c, "zk_watch_count") // every watch of every session

			w := startWatch(t, s.Session, p, zr.WithRecursive(recursive))
			if !recursive || !atLeast39(t, c) {
				// 3.9 counts a connection's watches on a path once, whatever
				// their modes: a recursive watch where a data watch is adds none.
				assert.Greater(t, mntrInt(t, c, "zk_watch_count"), count, "the persistent watch is on the server")
			}
			_, err = other.Set(p+"/kid", []byte("x"), -1) // fires the one below
			require.NoError(t, err)
			if recursive {
				assert.Equal(t, []string{"DATA_CHANGED " + p + "/kid"}, nextEvents(t, w, 1, 10*time.Second), "the persistent watch is on the server")
			}
			select {
			case e := <-below:
				assert.Equal(t, zk.EventNodeDataChanged, e.Type)
			case <-time.After(10 * time.Second):
				t.Fatal("the one-shot watch below the persistent one did not fire")
			}
			_, _, below, err = s.Conn().GetW(p + "/kid") // set it again
			require.NoError(t, err)

			require.NoError(t, w.Close(context.Background()))
			assert.Equal(t, before, sessionWatches(t, c, sid), "the server holds the Session's watches as before")
			assert.Equal(t, count, mntrInt(t, c, "zk_watch_count"), "as many watches on the server as before")
			_, err = other.Set(p, []byte("x"), -1)
			require.NoError(t, err)
			select {
			case e := <-same:
				assert.Equal(t, zk.EventNodeDataChanged, e.Type)
			case <-time.After(10 * time.Second):
				t.Fatal("the one-shot watch on the same path did not fire after Close")
			}
			_, err = other.Create(p+"/kid/y", nil, 0, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
			_, err = other.Set(p+"/kid", []byte("y"), -1)
			require.NoError(t, err)
			for _, ch := range []<-chan zk.Event{kids, below} {
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Fatal("a one-shot watch below did not fire after Close")
				}
			}
			assert.Empty(t, sessionWatches(t, c, sid), "nothing left once they fired")
		})
	}
}

// After go-zookeeper resumed the session on a new connection (and set its
// one-shot watches again there), Close still puts back the Session's
// one-shot watch on the path, and no other, beside another session that
// watches the path too.
func TestPersistentWatchCloseAfterAResumedSessionLeavesTheSessionsOtherWatchesAsTheyWere(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	s := connect(t, c, []string{proxy.Addr()})
	other := raw(t, c)
	p := testPath(t)
	freshPath(t, other, p)
	mkdirs(t, other, p)
	theirs := raw(t, c)
	_, _, _, err := theirs.GetW(p)
	require.NoError(t, err)
	_, _, _, err = theirs.ChildrenW(p)
	require.NoError(t, err)
	sid := s.Conn().SessionID()
	_, _, same, err := s.Conn().GetW(p)
	require.NoError(t, err)
	before := sessionWatches(t, c, sid)
	require.Equal(t, []string{p}, before)
	count := mntrInt(t, c, "zk_watch_count")

	w := startWatch(t, s.Session, p)
	proxy.ResetAll() // go-zookeeper resumes the session, its watch set again by SetWatches
	r := nextReset(t, w, 15*time.Second)
	require.Equal(t, zr.ResetReconnected, r.Reset)
	require.Equal(t, sid, r.SessionID)

	require.NoError(t, w.Close(context.Background()))
	assert.Equal(t, before, sessionWatches(t, c, sid), "the server holds the Session's watches as before")
	assert.Equal(t, count, mntrInt(t, c, "zk_watch_count"), "as many watches on the server as before")
	_, err = other.Set(p, []byte("x"), -1)
	require.NoError(t, err)
	select {
	case e := <-same:
		assert.Equal(t, zk.EventNodeDataChanged, e.Type)
	case <-time.After(10 * time.Second):
		t.Fatal("the one-shot watch on the path did not fire after Close")
	}
}

// ZooKeeper 3.6 to 3.8 keep one watch per connection and path: a one-shot
// watch set there turns a persistent watch into a one-shot one
// (ZOOKEEPER-4466), unless the persistent watch is set again behind it.
func TestPersistentWatchStaysPersistentWhenTheSessionSetsAOneShotWatchOnItsPath(t *testing.T) {
	for _, recursive := range []bool{false, true} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			c := server(t)
			s := connect(t, c, nil)
			other := raw(t, c)
			p := testPath(t)
			freshPath(t, other, p)
			mkdirs(t, other, p)
			w := startWatch(t, s.Session, p, zr.WithRecursive(recursive))
			before := wire.ReadCounts()
			_, _, oneShot, err := s.Conn().GetW(p)
			require.NoError(t, err)
			if !atLeast39(t, c) {
				// Changed before the server has the re-arm behind the
				// getData, the watch may miss them and says so with a
				// reset (shots.go's gap): this test is about after. The
				// re-arm is written once the getData's write returns,
				// and a sync of the same session is answered after it.
				require.Eventually(t, func() bool { return wire.ReadCounts().ReArms > before.ReArms }, 10*time.Second, time.Millisecond,
					"set again behind the one-shot watch")
				_, err = s.Conn().Sync(p)
				require.NoError(t, err)
			}
			for i := range 3 {
				_, err = other.Set(p, []byte(strconv.Itoa(i)), -1)
				require.NoError(t, err)
			}
			_, err = other.Create(p+"/kid", nil, 0, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
			want := []string{"DATA_CHANGED " + p, "DATA_CHANGED " + p, "DATA_CHANGED " + p, "CHILDREN_CHANGED " + p}
			if recursive {
				want[3] = "NODE_CREATED " + p + "/kid"
			}
			assert.Equal(t, want, nextEvents(t, w, 4, 10*time.Second))
			select {
			case e := <-oneShot:
				assert.Equal(t, zk.EventNodeDataChanged, e.Type)
			case <-time.After(10 * time.Second):
				t.Fatal("the one-shot watch did not fire")
			}
		})
	}
}

// Every notification of a persistent watch also reaches go-zookeeper,
// which holds no watcher for most of them and hands them to the Session's
// event callback: a burst must neither disturb the Session nor a lease on
// it, and the watch gets every change in order.
func TestPersistentWatchBurstReachesTheWatchInOrderAndLeavesTheSessionAlone(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	other := raw(t, c)
	p := testPath(t)
	freshPath(t, other, p)
	mkdirs(t, other, p)
	lease, err := zr.NewMutex(s.Session, p+"-lock").Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	defer func() { _ = lease.Release(ctxT(t, 10*time.Second)) }()
	states := watchStates(t, s.Session)
	w := startWatch(t, s.Session, p, zr.WithRecursive(true))

	const n = 2000
	want := make([]string, 0, n)
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := other.Create(fmt.Sprintf("%s/n%04d", p, i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range n {
		want = append(want, fmt.Sprintf("NODE_CREATED %s/n%04d", p, i))
	}
	start := time.Now()
	got := nextEvents(t, w, n, 60*time.Second)
	require.NoError(t, <-done)
	assert.Equal(t, want, got)
	t.Logf("%d notifications in %v", n, time.Since(start))
	require.NoError(t, lease.Err(), "the lease still holds")
	select {
	case sc := <-states.ch:
		t.Fatalf("the Session's state changed: %v", sc.State)
	default:
	}
}

// A reader that lets more events wait than the backlog allows loses the
// ones beyond it, and is told so with a WatchReset once it catches up.
func TestPersistentWatchBeyondItsBacklogDropsEventsAndSaysSo(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	other := raw(t, c)
	p := testPath(t)
	freshPath(t, other, p)
	mkdirs(t, other, p)
	const backlog = 10
	w := startWatch(t, s.Session, p, zr.WithRecursive(true), zr.WithWatchBacklog(backlog))
	for i := range 50 {
		// Created over the watch's own connection: each notification is
		// read before the create's reply, so all 50 are in once it returns.
		_, err := s.Conn().Create(fmt.Sprintf("%s/n%02d", p, i), nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	var got []string
	for {
		e := nextEvents(t, w, 1, 10*time.Second)[0]
		if strings.HasPrefix(e, "RESET") {
			assert.Equal(t, "RESET:OVERFLOW", e)
			break
		}
		got = append(got, e)
	}
	require.GreaterOrEqual(t, len(got), backlog)
	require.LessOrEqual(t, len(got), backlog+1, "the backlog, and the one the watch was handing over")
	for i, e := range got {
		assert.Equal(t, fmt.Sprintf("NODE_CREATED %s/n%02d", p, i), e)
	}
	noEvent(t, w, 100*time.Millisecond)
	_, err := other.Set(p, []byte("x"), -1)
	require.NoError(t, err)
	assert.Equal(t, []string{"DATA_CHANGED " + p}, nextEvents(t, w, 1, 10*time.Second))
}

// A server before 3.6 answers addWatch, an opcode it does not know, with
// UNIMPLEMENTED and drops the connection (played here by sending an
// opcode no server knows): Start says so with the typed error, and the
// Session reconnects and goes on without trying again.
func TestPersistentWatchOnAServerWithoutAddWatchSaysUnsupportedAndTheSessionGoesOn(t *testing.T) {
	if wireOff() {
		t.Skip("persistent watches need the wire layer")
	}
	c := server(t)
	s := connect(t, c, nil)
	sid := s.Conn().SessionID()
	states := watchStates(t, s.Session)
	t.Cleanup(wire.SetAddWatchOp(999))
	w := zr.NewPersistentWatch(s.Session, testPath(t), zr.WithRecursive(true))
	require.ErrorIs(t, w.Start(ctxT(t, 10*time.Second)), zr.ErrPersistentWatchUnsupported)
	states.next(t, 10*time.Second, zr.StateReconnected)
	assert.Equal(t, sid, s.Conn().SessionID(), "the same session")
	_, _, err := s.Conn().Get("/")
	require.NoError(t, err)
	select {
	case sc := <-states.ch:
		t.Fatalf("the Session's state changed again (%v): the watch was tried again", sc.State)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, w.Close(context.Background()))
}

// open receives from events: false once it is closed. It fails the test
// when nothing comes within 10 s.
func open(t *testing.T, events <-chan zr.WatchEvent) bool {
	t.Helper()
	select {
	case _, ok := <-events:
		return ok
	case <-time.After(10 * time.Second):
		t.Fatal("events neither delivered nor closed")
		return true
	}
}
