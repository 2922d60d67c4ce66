//go:build linux

package chaos_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/internal/fleet"
	"github.com/zkrecipes/zkrecipes/zktest"
)

var (
	flagDuration = flag.Duration("chaos.duration", 45*time.Second, "how long to inject faults (every fault kind is injected at least once)")
	flagSeed     = flag.Uint64("chaos.seed", 0, "seed of the fault schedule (0: from the clock; the seed is printed)")
	flagClients  = flag.Int("chaos.clients", 4, "number of client processes")
	flagKeep     = flag.String("chaos.log", "", "copy the shared log to this file after the run")
	flagLease    = flag.Duration("chaos.lease-time", 0, "lock with this lease time (WithLeaseTime); long leases then ignore Done and write on until fenced (0: none)")
)

const (
	// sessionTimeout is every client's session timeout.
	sessionTimeout = 4 * time.Second
	// recoveryBound is how soon acquisitions must resume after a fault
	// heals: the dead holder's session must expire (one session timeout)
	// and the clients reconnect, on a loaded 2-core machine.
	recoveryBound = 30 * time.Second
)

// The fault kinds.
const (
	leaderKill     = "leader-kill"     // SIGKILL the leader, restart it
	followerStop   = "follower-stop"   // SIGSTOP a follower, SIGCONT it
	expireHolder   = "expire-holder"   // expire the holder's session server-side
	blackholeShort = "blackhole-short" // cut the holder off for less than the session timeout
	blackholeLong  = "blackhole-long"  // cut the holder off for longer than the session timeout
	clientKill     = "client-kill"     // SIGKILL the holder's process, start a replacement
	loseReplies    = "lose-replies"    // requests reach the server, replies are lost, the connection resets
)

var faultKinds = []string{leaderKill, followerStop, expireHolder, blackholeShort, blackholeLong, clientKill, loseReplies}

// run is one chaos run.
type run struct {
	*fleet.Fleet
	store *chaos.Store
	path  string
	raw   *zk.Conn
}

func TestChaos_MutexUnderFaults(t *testing.T) {
	seed := fleet.Seed(*flagSeed)
	t.Logf("chaos seed %d (rerun with -chaos.seed=%d), duration %v, %d clients; load: %s", seed, seed, *flagDuration, *flagClients, loadavg())
	r := &run{path: "/chaos/lock"}
	r.Fleet = fleet.New(t.Context(), t, fleet.Config{Suite: "chaos", Seed: seed, Keep: *flagKeep, Prefix: "c", Args: r.clientArgs})
	var err error
	r.store, err = chaos.StartStore()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.store.Close() })
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(r.LogPath); err == nil {
				t.Logf("shared log, last lines:\n%s", tail(string(b), 80))
			}
		}
	})
	r.raw = rawConn(t, r.Ens)

	for range *flagClients {
		r.StartNext(t)
	}
	require.True(t, r.waitAcquired(t, 0, recoveryBound), "no client acquired the lock at all")

	// Faults, one at a time, in seeded random order: every kind once per
	// round, rounds until the duration is spent.
	start := time.Now()
	require.NoError(t, r.Inject(t.Context(), *flagDuration, faultKinds, 500*time.Millisecond, 1500*time.Millisecond, func(ctx context.Context, kind string) { r.inject(ctx, t, kind) }))

	// Stop: heal everything, let every live client release and close.
	sums := fleet.StopAll[chaos.Summary](t.Context(), t, r.Fleet)

	// After the session timeouts: no lock node, no ephemeral node.
	var kids []string
	var ephemerals string
	ok := assert.Eventually(t, func() bool {
		kids = children(t, r.raw, r.path)
		ephemerals = ephemeralCounts(r.Ens)
		return len(kids) == 0 && ephemerals == "0,0,0"
	}, 3*sessionTimeout+20*time.Second, 100*time.Millisecond)
	if !ok {
		t.Errorf("left behind: lock nodes %q, ephemeral nodes per server %s", kids, ephemerals)
	}

	events, err := chaos.ParseFile(r.LogPath)
	require.NoError(t, err)
	rep := chaos.Check(events)
	st := r.store.Stats()
	r.summary(t, seed, start, rep, st, sums, len(kids), ephemerals)

	assert.Empty(t, rep.Violations, "unexplained overlaps or token order breaks")
	assert.Zero(t, st.OutOfOrder, "writes accepted out of token order")
	assert.Positive(t, rep.Acquisitions)
	for _, k := range faultKinds {
		assert.Positive(t, rep.Faults[k], "fault %s never injected", k)
	}
	assert.Empty(t, rep.Unrecovered, "no acquisition after these faults healed")
	assert.LessOrEqual(t, rep.MaxRecovery().After, recoveryBound, "acquisitions resumed too late after %s", rep.MaxRecovery().Kind)
	assert.Empty(t, rep.Open, "holder intervals never closed")
	if *flagLease > 0 {
		b, err := os.ReadFile(r.LogPath)
		require.NoError(t, err)
		assert.Contains(t, string(b), "lease time expired", "no lease ran out its lease time")
		assert.Positive(t, st.Refused, "no write of an expired holder was fenced")
	}
}

// clientArgs returns the command line of client id, given its proxies.
func (r *run) clientArgs(id, servers string) []string {
	return []string{"-servers", servers, "-path", r.path, "-id", id, "-log", r.LogPath,
		"-store", r.store.Addr(), "-session-timeout", sessionTimeout.String(), "-session-file", r.sessionFile(id),
		"-lifetime", (*flagDuration + 10*time.Minute).String(), "-lease-time", flagLease.String()}
}

// sessionFile is where client id keeps its session id and password.
func (r *run) sessionFile(id string) string { return filepath.Join(r.Dir, id+".session") }

// inject injects one fault, heals it, and waits (bounded) for an
// acquisition after the heal.
func (r *run) inject(ctx context.Context, t *testing.T, kind string) {
	t.Helper()
	switch kind {
	case leaderKill:
		require.NoError(t, r.KillLeader(ctx, kind))
	case followerStop:
		require.NoError(t, r.StopFollower(ctx, kind, 2*time.Second, 6*time.Second))
	case expireHolder:
		p, id, pw := r.holder(t)
		if p == nil {
			r.Log.Add(chaos.Fault, kind, "none", "no-holder-found")
			break
		}
		// The holder may be between servers right after another fault.
		require.Eventually(t, func() bool { return connectedTo(r.Ens, id) }, 10*time.Second, 50*time.Millisecond)
		r.Expire(ctx, kind, p.ID, id, pw)
	case blackholeShort, blackholeLong:
		p, target := r.holderOrAny(t)
		d := r.Between(sessionTimeout/4, sessionTimeout/2)
		if kind == blackholeLong {
			d = r.Between(sessionTimeout*3/2, sessionTimeout*5/2)
		}
		require.NoError(t, r.Blackhole(ctx, kind, p, d, target))
	case loseReplies:
		r.loseReplies(t, kind)
	case clientKill:
		p, target := r.holderOrAny(t)
		require.NoError(t, r.Replace(ctx, t, kind, p, r.Between(200*time.Millisecond, time.Second), target))
	}
	healed := r.Log.Add(chaos.Heal, kind)
	if !r.waitAcquired(t, healed, recoveryBound) {
		t.Logf("no acquisition within %v after %s healed", recoveryBound, kind)
	}
}

// loseReplies makes the holder (or any client) lose the server's replies
// after 0-2 more have passed, for a random hold, then resets its
// connection (ZOOKEEPER-1262: a create can succeed while its reply is
// lost); the session survives. Half the time the client's reconnections
// lose every reply after the handshake too, once through each server, so
// that what it sends right after reconnecting (the search for a node whose
// create reply was lost) fails as well.
func (r *run) loseReplies(t *testing.T, kind string) {
	p, target := r.holderOrAny(t)
	pass := r.Rng.IntN(3)
	// Shorter than go-zookeeper's read timeout (2/3 of the session
	// timeout), so that the proxy's reset ends the connection.
	hold := r.Between(sessionTimeout/16, sessionTimeout/4)
	again := r.Rng.IntN(2) == 0
	var armed []<-chan struct{}
	if again {
		for _, px := range p.Proxies() {
			armed = append(armed, px.LoseRepliesOnNextConn(1, hold))
		}
	}
	var lost []<-chan struct{}
	for _, px := range p.Proxies() {
		lost = append(lost, px.LoseRepliesAfter(pass, hold))
	}
	r.Log.Add(chaos.Fault, kind, p.ID, target, "pass", pass, "hold", hold, "again", again)
	// An idle client pings every third of its session timeout, so the
	// replies to pass come within a session timeout.
	if !allClosed(lost, hold+2*sessionTimeout) {
		for _, px := range p.Proxies() {
			px.LoseReplies(0) // replies still passing: lose them now
		}
		allClosed(lost, 5*time.Second)
	}
	allClosed(armed, time.Duration(len(armed)+1)*(hold+sessionTimeout))
	p.Disarm() // the servers the client did not reconnect to
}

// allClosed waits until every channel of chs is closed, for at most d in
// all.
func allClosed(chs []<-chan struct{}, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for _, ch := range chs {
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// holderOrAny returns the holder, or a random live client when none is
// found, and says which.
func (r *run) holderOrAny(t *testing.T) (*fleet.Proc, string) {
	if p, _, _ := r.holder(t); p != nil {
		return p, "holder"
	}
	return r.AnyLive(), "waiter"
}

// holder finds the client whose session owns the first lock node, waiting
// up to a few seconds for one (between a release and the next grant there
// is none).
func (r *run) holder(t *testing.T) (*fleet.Proc, int64, []byte) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		kids := children(t, r.raw, r.path)
		sort.Slice(kids, func(i, j int) bool { return seqOf(kids[i]) < seqOf(kids[j]) })
		if len(kids) > 0 {
			_, st, err := r.raw.Get(r.path + "/" + kids[0])
			if err == nil {
				for _, p := range r.Live() {
					if id, pw, err := fleet.ReadSession(r.sessionFile(p.ID)); err == nil && id == st.EphemeralOwner {
						return p, id, pw
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the server's view, not ordering goroutines
	}
	return nil, 0, nil
}

func seqOf(name string) string {
	if i := strings.LastIndex(name, "lock-"); i >= 0 {
		return name[i+len("lock-"):]
	}
	return name
}

// waitAcquired waits until the log holds an ACQUIRED line stamped after
// since, for at most d.
func (r *run) waitAcquired(t *testing.T, since int64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		events, err := chaos.ParseFile(r.LogPath)
		require.NoError(t, err)
		for _, ev := range events {
			if ev.Kind == chaos.Acquired && ev.T > since {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond) // polling the log file
	}
	return false
}

// connectedTo reports whether some server lists a connection of session id.
func connectedTo(ens *zktest.Cluster, id int64) bool {
	for _, s := range ens.Servers() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		out, err := zktest.FourLetterWord(ctx, s, "cons")
		cancel()
		if err == nil && strings.Contains(out, fmt.Sprintf("sid=0x%x,", id)) {
			return true
		}
	}
	return false
}

func rawConn(t *testing.T, ens *zktest.Cluster) *zk.Conn {
	conn, _, err := zk.Connect(ens.Servers(), 20*time.Second, zk.WithLogInfo(false), zk.WithLogger(fleet.Quiet{}))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	require.Eventually(t, func() bool { return conn.State() == zk.StateHasSession }, 30*time.Second, 10*time.Millisecond)
	return conn
}

func children(t *testing.T, conn *zk.Conn, path string) []string {
	for i := 0; ; i++ {
		kids, _, err := conn.Children(path)
		if err == zk.ErrNoNode {
			return nil
		}
		if err == nil || i == 50 {
			require.NoError(t, err)
			return kids
		}
		time.Sleep(100 * time.Millisecond) // the observer's own connection is recovering from a fault
	}
}

// ephemeralCounts returns zk_ephemerals_count of every server, joined by
// commas ("?" for a server that does not answer).
func ephemeralCounts(ens *zktest.Cluster) string {
	out := make([]string, ens.Size())
	for i := range out {
		out[i] = "?"
		if m, err := ens.Mntr(i); err == nil {
			if n, err := strconv.Atoi(m["zk_ephemerals_count"]); err == nil {
				out[i] = strconv.Itoa(n)
			}
		}
	}
	return strings.Join(out, ",")
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// summary prints the run's figures.
func (r *run) summary(t *testing.T, seed uint64, start time.Time, rep chaos.Report, st chaos.StoreStats, sums []chaos.Summary, nodes int, ephemerals string) {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos summary (seed %d, %v of faults, load %s)\n", seed, time.Since(start).Round(time.Second), loadavg())
	fmt.Fprintf(&b, "  acquisitions: %d over %d clients %v; failed acquisitions: %d; leases lost: %d\n",
		rep.Acquisitions, len(rep.ByClient), fleet.SortedCounts(rep.ByClient), rep.Errors, rep.Losses)
	fmt.Fprintf(&b, "  faults: %v\n", fleet.SortedCounts(rep.Faults))
	fmt.Fprintf(&b, "  store: %s\n", st)
	fmt.Fprintf(&b, "  overlaps explained by an earlier Done: %d (longest %v); violations: %d\n",
		rep.Explained, rep.MaxExplained, len(rep.Violations))
	byKind := map[string][]time.Duration{}
	for _, rc := range rep.Recoveries {
		byKind[rc.Kind] = append(byKind[rc.Kind], rc.After)
	}
	fmt.Fprintf(&b, "  resumed after heal (max per kind):")
	for _, k := range faultKinds {
		m := time.Duration(0)
		for _, d := range byKind[k] {
			m = max(m, d)
		}
		fmt.Fprintf(&b, " %s=%v", k, m.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "; not resumed: %d\n", len(rep.Unrecovered))
	leaks := 0
	for _, s := range sums {
		if s.Leaked != "" {
			leaks++
		}
	}
	fmt.Fprintf(&b, "  after the run: %d lock nodes, ephemerals per server %s, clients with goroutines left %d of %d\n",
		nodes, ephemerals, leaks, len(sums))
	for _, v := range rep.Violations {
		fmt.Fprintf(&b, "  VIOLATION %s\n", v)
	}
	t.Log(b.String())
}
