package recipes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Lost replies (ZOOKEEPER-1262, issue 25): a fault proxy lets a Session's
// requests reach the server but loses the server's replies, then resets the
// connection; go-zookeeper reconnects on the same ZooKeeper session, so an
// ephemeral node whose create reply was lost lives on. Two things must not
// follow:
//
//   - an orphan: an acquisition that gives up (its deadline passes while the
//     create's reply is held) leaves its node under the live session, where
//     nobody holds it and every other session waits behind it until the
//     owner's Session closes;
//   - a second node: the search for the node of a create whose reply was
//     lost fails too (its own reply is lost), and the acquisition creates
//     again without searching first; it then owns two nodes and waits on its
//     own older one, for ever under context.Background().
//
// Each test repeats its fault with varied timing and checks, every time,
// that the acquisition returns, that no node of the Session is left once
// the clean-up had its time, that one acquisition never owns more than one
// node per directory, that another session then acquires, and that tokens
// never go down.

// lostReplyRecipe is one recipe under the lost-reply tests.
type lostReplyRecipe struct {
	// lossy is the contender of the Session behind the proxy, for round i
	// (a test may vary the kind with i).
	lossy func(s *zr.Session, path string, i int) locker
	// other is the contender of the session that must acquire after.
	other func(s *zr.Session, path string) locker
	// dirs lists the directories under path where the recipe creates
	// nodes ("" is path itself); they are created beforehand, persistent,
	// so that a recipe's first request is the create of its node.
	dirs []string
	// pass lists, for round i (cyclically), how many replies pass before
	// they are lost: 0 loses the reply to the first create; more reach a
	// later request (the listing behind the create, a semaphore's lease
	// create).
	pass []int
	// creates lists the values of pass that lose the reply to a create.
	creates []int
}

var (
	lostReplyMutex = lostReplyRecipe{
		lossy:   func(s *zr.Session, p string, _ int) locker { return zr.NewMutex(s, p) },
		other:   func(s *zr.Session, p string) locker { return zr.NewMutex(s, p) },
		dirs:    []string{""},
		pass:    []int{0, 0, 1},
		creates: []int{0},
	}
	// A semaphore of one, so that any lease or mutex node left behind
	// blocks the other session. Its replies, uncontended: the mutex node's
	// create, the listing behind it, then the lease's create.
	lostReplySemaphore = lostReplyRecipe{
		lossy:   func(s *zr.Session, p string, _ int) locker { return semaphoreOne{zr.NewSemaphore(s, p, 1)} },
		other:   func(s *zr.Session, p string) locker { return semaphoreOne{zr.NewSemaphore(s, p, 1)} },
		dirs:    []string{"/locks", "/leases"},
		pass:    []int{0, 2, 0, 2, 1, 3},
		creates: []int{0, 2},
	}
	// Writers and readers in turn; the other session writes, so that a
	// read node left behind blocks it too.
	lostReplyRWMutex = lostReplyRecipe{
		lossy: func(s *zr.Session, p string, i int) locker {
			if i%2 == 0 {
				return zr.NewRWMutex(s, p).WriteLock()
			}
			return zr.NewRWMutex(s, p).ReadLock()
		},
		other:   func(s *zr.Session, p string) locker { return zr.NewRWMutex(s, p).WriteLock() },
		dirs:    []string{""},
		pass:    []int{0, 0, 1, 1},
		creates: []int{0},
	}
	lostReplyElection = lostReplyRecipe{
		lossy: func(s *zr.Session, p string, _ int) locker {
			return campaign{zr.NewElection(s, p, zr.WithParticipantID("lossy"))}
		},
		other: func(s *zr.Session, p string) locker {
			return campaign{zr.NewElection(s, p, zr.WithParticipantID("other"))}
		},
		dirs:    []string{""},
		pass:    []int{0, 0, 1},
		creates: []int{0},
	}
)

func TestLostReply_MutexAcquireGivenUpLeavesNoNode(t *testing.T) {
	runLostReplyOrphan(t, lostReplyMutex)
}

func TestLostReply_MutexAcquireRetriedAfterAFailedSearchOwnsOneNode(t *testing.T) {
	runLostReplySecondNode(t, lostReplyMutex)
}

func TestLostReply_SemaphoreAcquireGivenUpLeavesNoNode(t *testing.T) {
	runLostReplyOrphan(t, lostReplySemaphore)
}

func TestLostReply_SemaphoreAcquireRetriedAfterAFailedSearchOwnsOneNode(t *testing.T) {
	runLostReplySecondNode(t, lostReplySemaphore)
}

func TestLostReply_RWMutexAcquireGivenUpLeavesNoNode(t *testing.T) {
	runLostReplyOrphan(t, lostReplyRWMutex)
}

func TestLostReply_RWMutexAcquireRetriedAfterAFailedSearchOwnsOneNode(t *testing.T) {
	runLostReplySecondNode(t, lostReplyRWMutex)
}

func TestLostReply_ElectionCampaignGivenUpLeavesNoNode(t *testing.T) {
	runLostReplyOrphan(t, lostReplyElection)
}

func TestLostReply_ElectionCampaignRetriedAfterAFailedSearchOwnsOneNode(t *testing.T) {
	runLostReplySecondNode(t, lostReplyElection)
}

const (
	lostReplyRounds = 20
	// lostReplyGuard bounds every acquisition of these tests: a few reconnections
	// and holds of a fraction of a second each.
	lostReplyGuard = 10 * time.Second
	// lostReplyCleanup is the time the clean-up of an abandoned node gets.
	lostReplyCleanup = 5 * time.Second
)

// lostReplyRig is a test's server, proxy and sessions.
type lostReplyRig struct {
	r     lostReplyRecipe
	path  string
	dirs  []string
	obs   *zk.Conn
	proxy *zktest.Proxy
	lossy *client // behind the proxy
	other *client // straight to the server
	last  int64   // the highest token granted so far
}

func newLostReplyRig(t *testing.T, r lostReplyRecipe, policy zr.LossPolicy) *lostReplyRig {
	t.Parallel()
	c := server(t)
	g := &lostReplyRig{r: r, path: testPath(t), obs: raw(t, c)}
	for _, d := range r.dirs {
		g.dirs = append(g.dirs, g.path+d)
		mkdirs(t, g.obs, g.path+d)
	}
	g.proxy = zktest.NewProxy(t, c.Servers()[0])
	// The proxy is listed twice: go-zookeeper pauses a second before it
	// tries the first address of its list again; this way every
	// reconnection is immediate, through the same proxy.
	g.lossy = connect(t, c, []string{g.proxy.Addr(), g.proxy.Addr()},
		zr.WithSessionTimeout(8*time.Second), zr.WithLossPolicy(policy))
	g.other = connect(t, c, nil)
	// The Session holds a watch, as one with a waiter does, so that each
	// reconnection re-sets it at once; one without watches holds its
	// replies on each reconnection for a moment (see resume.go), which
	// would make these rounds slower and change nothing else. The path is
	// never deleted nor written: the watch never fires.
	_, _, _, err := g.lossy.Conn().ExistsW(g.path)
	require.NoError(t, err)
	return g
}

// ready waits until the lossy Session has one live connection that
// answers, so that a fault injected now hits the connection its next
// requests go over.
func (g *lostReplyRig) ready(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		if g.proxy.Conns() != 1 || !connected(g.lossy.State()) {
			return false
		}
		_, _, err := g.lossy.Conn().Exists(g.path)
		return err == nil && g.proxy.Conns() == 1
	}, lostReplyGuard, 5*time.Millisecond, "the Session behind the proxy is connected")
}

func connected(s zr.ConnState) bool { return s == zr.StateConnected || s == zr.StateReconnected }

// ours lists the nodes under the recipe's directories that the lossy
// Session owns, by directory. It touches no t: require.Eventually runs it
// on a goroutine of its own.
func (g *lostReplyRig) ours() (map[string][]string, error) {
	id := g.lossy.SessionID()
	out := map[string][]string{}
	for _, d := range g.dirs {
		kids, _, err := g.obs.Children(d)
		if err != nil {
			return nil, err
		}
		for _, k := range kids {
			ok, st, err := g.obs.Exists(d + "/" + k)
			if err != nil {
				return nil, err
			}
			if ok && st.EphemeralOwner == id {
				out[d] = append(out[d], k)
			}
		}
	}
	return out, nil
}

// noneLeft waits until the lossy Session owns no node of the recipe.
func (g *lostReplyRig) noneLeft(t *testing.T, round string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		left, err := g.ours()
		require.NoError(c, err)
		assert.Empty(c, left, "nodes of the Session behind the proxy")
	}, lostReplyCleanup, 20*time.Millisecond, "%s: nodes left after the acquisition ended", round)
}

// atMostOnePerDir checks that the lossy Session owns at most one node in
// each directory while its single acquisition holds.
func (g *lostReplyRig) atMostOnePerDir(t *testing.T, round string, l *zr.Lease) {
	t.Helper()
	ours, err := g.ours()
	require.NoError(t, err)
	for d, ks := range ours {
		require.LessOrEqual(t, len(ks), 1, "%s: one acquisition (holding %s) owns %v under %s", round, l.Path(), ks, d)
	}
}

// granted checks a lease's token against every token granted before.
func (g *lostReplyRig) granted(t *testing.T, round, who string, l *zr.Lease) {
	t.Helper()
	require.Greater(t, l.Token(), g.last, "%s: %s's token goes down", round, who)
	g.last = l.Token()
}

// otherAcquires checks that the session straight to the server acquires,
// then releases.
func (g *lostReplyRig) otherAcquires(t *testing.T, round string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lostReplyCleanup)
	defer cancel()
	l, err := g.r.other(g.other.Session, g.path).Acquire(ctx)
	require.NoError(t, err, "%s: another session cannot acquire; nodes: %v", round, g.nodes(t))
	g.granted(t, round, "the other session", l)
	require.NoError(t, l.Release(ctx))
}

// lazy is a message argument formatted only when a check fails.
type lazy func() string

func (f lazy) String() string { return f() }

// nodes describes, when a check fails, every node under the recipe's
// directories with its owner.
func (g *lostReplyRig) nodes(t *testing.T) lazy { return func() string { return g.describe(t) } }

// describe lists every node under the recipe's directories with its owner.
func (g *lostReplyRig) describe(t *testing.T) string {
	var b strings.Builder
	for _, d := range g.dirs {
		for _, k := range children(t, g.obs, d) {
			if ok, st, err := g.obs.Exists(d + "/" + k); err == nil && ok {
				fmt.Fprintf(&b, "%s/%s (owner 0x%x) ", d, k, st.EphemeralOwner)
			}
		}
	}
	return fmt.Sprintf("[%s] lossy session 0x%x, other 0x%x", strings.TrimSpace(b.String()), g.lossy.SessionID(), g.other.SessionID())
}

type acquired struct {
	l   *zr.Lease
	err error
}

// acquireBehind runs lk.Acquire(ctx) on a goroutine of its own; the result
// comes back on the channel.
func acquireBehind(ctx context.Context, lk locker) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := lk.Acquire(ctx)
		ch <- acquired{l, err}
	}()
	return ch
}

// returned waits for an acquisition started by acquireBehind, failing the
// test when it does not return within lostReplyGuard.
func (g *lostReplyRig) returned(t *testing.T, round string, ch <-chan acquired) acquired {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(lostReplyGuard):
		t.Fatalf("%s: the acquisition behind the proxy did not return within %v; nodes: %v", round, lostReplyGuard, g.describe(t))
		return acquired{}
	}
}

// runLostReplyOrphan: the acquisition's deadline passes while the reply to
// its create (or a later request) is held; the reset comes after. The
// acquisition gives up, and must leave no node behind.
func runLostReplyOrphan(t *testing.T, r lostReplyRecipe) {
	g := newLostReplyRig(t, r, zr.LoseOnSuspended)
	for i := range lostReplyRounds {
		round := fmt.Sprintf("round %d", i)
		hold := 60*time.Millisecond + time.Duration(i%5)*30*time.Millisecond // 60-180ms
		deadline := hold * time.Duration(2+i%3) / 5                          // 40-80% of hold
		pass := r.pass[i%len(r.pass)]
		round += fmt.Sprintf(" (hold %v, deadline %v, %d replies pass)", hold, deadline, pass)
		g.ready(t)

		lost := g.proxy.LoseRepliesAfter(pass, hold)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		res := g.returned(t, round, acquireBehind(ctx, r.lossy(g.lossy.Session, g.path, i)))
		cancel()
		if pass == 0 {
			select {
			case <-lost:
			case <-time.After(lostReplyGuard):
				t.Fatalf("%s: the proxy did not reset the connection", round)
			}
		}
		if res.err == nil { // the replies it needed came before the loss
			g.atMostOnePerDir(t, round, res.l)
			g.granted(t, round, "the Session behind the proxy", res.l)
			rctx, rcancel := context.WithTimeout(context.Background(), lostReplyGuard)
			_ = res.l.Release(rctx) // may fail with the connection: its node is then deleted in the background
			rcancel()
		} else {
			require.ErrorIs(t, res.err, context.DeadlineExceeded, round)
		}
		g.noneLeft(t, round)
		g.otherAcquires(t, round)
	}
}

// runLostReplySecondNode: the reply to a create is lost and, right after
// the reconnection, the replies to every request after the handshake are
// lost as well (the search for the node among them), once or twice. The
// acquisition, nobody else holding, must acquire with a single node.
func runLostReplySecondNode(t *testing.T, r lostReplyRecipe) {
	g := newLostReplyRig(t, r, zr.LoseOnLost)
	for i := range lostReplyRounds {
		round := fmt.Sprintf("round %d", i)
		hold := 60*time.Millisecond + time.Duration(i%4)*40*time.Millisecond         // 60-180ms
		holdNext := 60*time.Millisecond + time.Duration((i/2)%3)*50*time.Millisecond // 60-160ms
		pass := r.creates[i%len(r.creates)]
		searches := 1 + i%3/2 // 1, 1, 2, ...: failed searches after the lost create
		round += fmt.Sprintf(" (hold %v then %v, %d replies pass, %d failed searches)", hold, holdNext, pass, searches)
		g.ready(t)

		var next []<-chan struct{}
		for range searches {
			next = append(next, g.proxy.LoseRepliesOnNextConn(1, holdNext))
		}
		g.proxy.LoseRepliesAfter(pass, hold)
		ctx, cancel := context.Background(), context.CancelFunc(func() {}) // a self-wait never returns: the guard fails it
		if i%2 == 1 {
			ctx, cancel = context.WithTimeout(ctx, lostReplyGuard-2*time.Second)
		}
		res := g.returned(t, round, acquireBehind(ctx, r.lossy(g.lossy.Session, g.path, i)))
		cancel()
		require.NoError(t, res.err, "%s: nodes: %v", round, g.nodes(t))
		g.atMostOnePerDir(t, round, res.l)
		g.granted(t, round, "the Session behind the proxy", res.l)
		rctx, rcancel := context.WithTimeout(context.Background(), lostReplyGuard)
		require.NoError(t, res.l.Release(rctx), round)
		rcancel()
		for _, ch := range next {
			select {
			case <-ch:
			case <-time.After(lostReplyGuard):
				t.Fatalf("%s: the Session did not reconnect through the armed proxy", round)
			}
		}
		g.noneLeft(t, round)
		g.otherAcquires(t, round)
	}
}

// mkdirs creates path and its missing ancestors as persistent nodes.
func mkdirs(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, err := conn.Create(path[:i], nil, 0, zk.WorldACL(zk.PermAll))
		if err != zk.ErrNodeExists {
			require.NoError(t, err, "create %s", path[:i])
		}
	}
}
