package recipes_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"go.uber.org/goleak"
)

// awaitMembers waits until g's view is want.
func awaitMembers(t *testing.T, g *zr.GroupMember, within time.Duration, want map[string]string) {
	t.Helper()
	deadline := time.After(within)
	for {
		members, ch := g.Members()
		got := map[string]string{}
		for id, d := range members {
			got[id] = string(d)
		}
		if assert.ObjectsAreEqual(want, got) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("members %v, want %v", got, want)
		}
	}
}

func TestGroupMember_EveryMemberSeesTheGroupFollowChanges(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	a := zr.NewGroupMember(connect(t, c, nil).Session, path, "a", []byte("1"))
	defer a.Close(context.Background())
	require.NoError(t, a.Start(ctx))
	require.NoError(t, a.WaitInPlace(ctx))
	awaitMembers(t, a, 5*time.Second, map[string]string{"a": "1"})

	bs := connect(t, c, nil)
	b := zr.NewGroupMember(bs.Session, path, "b", []byte("2"))
	defer b.Close(context.Background())
	require.NoError(t, b.Start(ctx))
	awaitMembers(t, a, 5*time.Second, map[string]string{"a": "1", "b": "2"})
	awaitMembers(t, b, 5*time.Second, map[string]string{"a": "1", "b": "2"})

	require.NoError(t, b.SetData(ctx, []byte("22")))
	awaitMembers(t, a, 5*time.Second, map[string]string{"a": "1", "b": "22"})

	// b's session expires: b comes back, and a's view converges.
	oldID := bs.SessionID()
	bs.expire(t)
	require.Eventually(t, func() bool { // in place again under the new session
		st, _ := b.Status()
		return st.InPlace && bs.SessionID() != oldID && bs.State() == zr.StateReconnected
	}, 10*time.Second, 10*time.Millisecond)
	awaitMembers(t, a, 10*time.Second, map[string]string{"a": "1", "b": "22"})

	require.NoError(t, b.Close(ctx))
	awaitMembers(t, a, 5*time.Second, map[string]string{"a": "1"})
	assert.Empty(t, children(t, raw(t, c), path+"/b"))
}

func TestGroupMember_CloseLeavesNoNodeAndNoGoroutine(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	path := testPath(t)
	obs := raw(t, c)
	ignore := goleak.IgnoreCurrent()
	g := zr.NewGroupMember(cl.Session, path, "me", nil)
	require.NoError(t, g.Start(ctxT(t, 10*time.Second)))
	require.NoError(t, g.WaitInPlace(ctxT(t, 10*time.Second)))
	require.NoError(t, g.Close(ctxT(t, 5*time.Second)))
	assert.Empty(t, children(t, obs, path))
	goleak.VerifyNone(t, append(ownGoroutinesOnly, ignore)...)
	assert.ErrorIs(t, zr.NewGroupMember(cl.Session, path, "a/b", nil).Start(context.Background()), zr.ErrInvalidArgument)
}

// A member's view of a large group runs on one TreeCache: its goroutines
// do not grow with the members it follows. (The bound leaves room for the
// Session's idle request workers, at most 16; a goroutine per member
// would add 101.)
func TestGroupMember_ViewCostsNoGoroutinePerMember(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	const n = 100
	want := map[string]string{"me": "x"}
	for i := range n {
		id := fmt.Sprintf("m%03d", i)
		g := zr.NewGroupMember(s.Session, path, id, []byte(id))
		require.NoError(t, g.Start(ctx))
		require.NoError(t, g.WaitInPlace(ctx))
		defer g.Close(context.Background())
		want[id] = id
	}
	// n members of one Session, each with its own view; one more, measured.
	before := runtime.NumGoroutine()
	g := zr.NewGroupMember(s.Session, path, "me", []byte("x"))
	require.NoError(t, g.Start(ctx))
	defer g.Close(context.Background())
	awaitMembers(t, g, 5*time.Second, want)
	// The other members' views handle the join too, on goroutines that
	// end once they have: wait for those, not for a fixed time.
	var grown int
	assert.Eventually(t, func() bool {
		grown = runtime.NumGoroutine() - before
		return grown < 30
	}, 10*time.Second, 20*time.Millisecond, "goroutines added by one member's view of %d members", n+1)
	t.Logf("goroutines added by one member's view of %d members: %d", n+1, grown)
}

// curatorMembers polls the ExtrasPeer's Curator GroupMember on path until
// its getCurrentMembers is want (as "id=data" fields, sorted by id).
func curatorMembers(t *testing.T, cur *curatorView, path string, within time.Duration, want ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := cur.ask(t, "MEMBERS", "members", path)
		if slices.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Curator's GroupMember sees %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond) // polling: Curator's cache follows on its own
	}
}

// A Go GroupMember and Curator 5.4's GroupMember on one path see each
// other's membership and data, joining, changing and leaving, both ways.
func TestInterop_GroupMemberAndCuratorGroupMemberSeeEachOther(t *testing.T) {
	path := testPath(t)
	cur := startCuratorView(t)
	s := connect(t, server(t), nil)
	ctx := ctxT(t, time.Minute)

	g := zr.NewGroupMember(s.Session, path, "go", []byte("g1"))
	require.NoError(t, g.Start(ctx))
	defer g.Close(context.Background())
	require.NoError(t, g.WaitInPlace(ctx))
	cur.ask(t, "OK", "join", path, "java", "j1")

	awaitMembers(t, g, 10*time.Second, map[string]string{"go": "g1", "java": "j1"})
	curatorMembers(t, cur, path, 10*time.Second, "go=g1", "java=j1")

	require.NoError(t, g.SetData(ctx, []byte("g2")))
	curatorMembers(t, cur, path, 10*time.Second, "go=g2", "java=j1")

	cur.ask(t, "OK", "leave", path)
	awaitMembers(t, g, 10*time.Second, map[string]string{"go": "g2"})

	// Curator joins again, and sees Go leave.
	cur.ask(t, "OK", "join", path, "java", "j3")
	awaitMembers(t, g, 10*time.Second, map[string]string{"go": "g2", "java": "j3"})
	require.NoError(t, g.Close(ctx))
	curatorMembers(t, cur, path, 10*time.Second, "java=j3")
}
