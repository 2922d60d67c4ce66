//go:build linux

package chaos_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
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
	rng     *rand.Rand
	ens     *zktest.Cluster
	store   *chaos.Store
	bin     string
	dir     string
	logPath string
	log     *chaos.Log
	path    string
	raw     *zk.Conn
	procs   []*proc
	next    int // next client number
}

func TestChaos_MutexUnderFaults(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d (rerun with -chaos.seed=%d), duration %v, %d clients; load: %s", seed, seed, *flagDuration, *flagClients, loadavg())
	r := &run{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dir: t.TempDir(), path: "/chaos/lock"}
	r.bin = buildClient(t)
	r.ens = zktest.Start(t, zktest.WithSize(3))
	var err error
	r.store, err = chaos.StartStore()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.store.Close() })
	r.logPath = r.dir + "/shared.log"
	r.log, err = chaos.OpenLog(r.logPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.log.Close() })
	t.Cleanup(func() {
		if *flagKeep != "" {
			if b, err := os.ReadFile(r.logPath); err == nil {
				_ = os.WriteFile(*flagKeep, b, 0o644)
			}
		}
		if t.Failed() {
			if b, err := os.ReadFile(r.logPath); err == nil {
				t.Logf("shared log, last lines:\n%s", tail(string(b), 80))
			}
		}
	})
	r.raw = rawConn(t, r.ens)

	for range *flagClients {
		r.startNext(t)
	}
	require.True(t, r.waitAcquired(t, 0, recoveryBound), "no client acquired the lock at all")

	// Faults, one at a time, in seeded random order: every kind once per
	// round, rounds until the duration is spent.
	start := time.Now()
	for round := 0; round == 0 || time.Since(start) < *flagDuration; round++ {
		for _, i := range r.rng.Perm(len(faultKinds)) {
			if round > 0 && time.Since(start) >= *flagDuration {
				break
			}
			r.inject(t, faultKinds[i])
			time.Sleep(r.between(500*time.Millisecond, 1500*time.Millisecond)) // a random gap in the schedule, not ordering
		}
	}

	// Stop: heal everything, let every live client release and close.
	for _, p := range r.procs {
		p.heal()
	}
	var sums []clientSummary
	for _, p := range r.procs {
		if p.killed {
			continue
		}
		sum, err := p.stop(30 * time.Second)
		if assert.NoError(t, err) {
			sums = append(sums, sum)
			assert.Empty(t, sum.Leaked, "goroutines left in client %s after Session.Close", p.id)
		}
	}

	// After the session timeouts: no lock node, no ephemeral node.
	var kids []string
	var ephemerals string
	ok := assert.Eventually(t, func() bool {
		kids = children(t, r.raw, r.path)
		ephemerals = ephemeralCounts(r.ens)
		return len(kids) == 0 && ephemerals == "0,0,0"
	}, 3*sessionTimeout+20*time.Second, 100*time.Millisecond)
	if !ok {
		t.Errorf("left behind: lock nodes %q, ephemeral nodes per server %s", kids, ephemerals)
	}

	events, err := chaos.ParseFile(r.logPath)
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
		b, err := os.ReadFile(r.logPath)
		require.NoError(t, err)
		assert.Contains(t, string(b), "lease time expired", "no lease ran out its lease time")
		assert.Positive(t, st.Refused, "no write of an expired holder was fenced")
	}
}

func (r *run) startNext(t *testing.T) *proc {
	r.next++
	return r.startProc(t, fmt.Sprintf("c%d", r.next))
}

// between returns a random duration in [lo, hi).
func (r *run) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)))
}

// inject injects one fault, heals it, and waits (bounded) for an
// acquisition after the heal.
func (r *run) inject(t *testing.T, kind string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch kind {
	case leaderKill:
		leader, err := r.ens.WaitLeader(ctx)
		require.NoError(t, err)
		require.NoError(t, r.ens.Kill(leader))
		r.log.Add(chaos.Fault, kind, "server", leader)
		_, err = r.ens.WaitLeader(ctx)
		require.NoError(t, err, "the survivors elect a leader")
		time.Sleep(r.between(time.Second, 3*time.Second)) // the fault's random length
		require.NoError(t, r.ens.Restart(leader))
	case followerStop:
		leader, err := r.ens.WaitLeader(ctx)
		require.NoError(t, err)
		f := (leader + 1 + r.rng.IntN(2)) % 3
		require.NoError(t, r.ens.Stop(f))
		r.log.Add(chaos.Fault, kind, "server", f)
		time.Sleep(r.between(2*time.Second, 6*time.Second))
		require.NoError(t, r.ens.Cont(f))
		require.NoError(t, r.ens.WaitServing(ctx, f))
	case expireHolder:
		p, id, pw := r.holder(t)
		if p == nil {
			r.log.Add(chaos.Fault, kind, "none", "no-holder-found")
			break
		}
		// The holder may be between servers right after another fault.
		require.Eventually(t, func() bool { return connectedTo(r.ens, id) }, 10*time.Second, 50*time.Millisecond)
		srv, err := expire(ctx, r.ens, id, pw)
		r.log.Add(chaos.Fault, kind, p.id, fmt.Sprintf("0x%x", id), "server", srv, errText(err))
	case blackholeShort, blackholeLong:
		p, target := r.holderOrAny(t)
		d := r.between(sessionTimeout/4, sessionTimeout/2)
		if kind == blackholeLong {
			d = r.between(sessionTimeout*3/2, sessionTimeout*5/2)
		}
		p.blackhole()
		r.log.Add(chaos.Fault, kind, p.id, target, d)
		time.Sleep(d)
		p.heal()
	case loseReplies:
		r.loseReplies(t, kind)
	case clientKill:
		p, target := r.holderOrAny(t)
		p.killed = true
		require.NoError(t, p.cmd.Process.Kill())
		<-p.exited
		r.log.Add(chaos.Killed, p.id)
		r.log.Add(chaos.Fault, kind, p.id, target)
		time.Sleep(r.between(200*time.Millisecond, time.Second))
		r.startNext(t)
	}
	healed := r.log.Add(chaos.Heal, kind)
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
	pass := r.rng.IntN(3)
	// Shorter than go-zookeeper's read timeout (2/3 of the session
	// timeout), so that the proxy's reset ends the connection.
	hold := r.between(sessionTimeout/16, sessionTimeout/4)
	again := r.rng.IntN(2) == 0
	var armed []<-chan struct{}
	if again {
		for _, px := range p.proxies {
			armed = append(armed, px.LoseRepliesOnNextConn(1, hold))
		}
	}
	var lost []<-chan struct{}
	for _, px := range p.proxies {
		lost = append(lost, px.LoseRepliesAfter(pass, hold))
	}
	r.log.Add(chaos.Fault, kind, p.id, target, "pass", pass, "hold", hold, "again", again)
	// An idle client pings every third of its session timeout, so the
	// replies to pass come within a session timeout.
	if !allClosed(lost, hold+2*sessionTimeout) {
		for _, px := range p.proxies {
			px.LoseReplies(0) // replies still passing: lose them now
		}
		allClosed(lost, 5*time.Second)
	}
	allClosed(armed, time.Duration(len(armed)+1)*(hold+sessionTimeout))
	for _, px := range p.proxies {
		px.Disarm() // the servers the client did not reconnect to
	}
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

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// live returns the clients that run.
func (r *run) live() []*proc {
	var out []*proc
	for _, p := range r.procs {
		if p.alive() {
			out = append(out, p)
		}
	}
	return out
}

// holderOrAny returns the holder, or a random live client when none is
// found, and says which.
func (r *run) holderOrAny(t *testing.T) (*proc, string) {
	if p, _, _ := r.holder(t); p != nil {
		return p, "holder"
	}
	live := r.live()
	return live[r.rng.IntN(len(live))], "waiter"
}

// holder finds the client whose session owns the first lock node, waiting
// up to a few seconds for one (between a release and the next grant there
// is none).
func (r *run) holder(t *testing.T) (*proc, int64, []byte) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		kids := children(t, r.raw, r.path)
		sort.Slice(kids, func(i, j int) bool { return seqOf(kids[i]) < seqOf(kids[j]) })
		if len(kids) > 0 {
			_, st, err := r.raw.Get(r.path + "/" + kids[0])
			if err == nil {
				for _, p := range r.live() {
					if id, pw, err := p.session(); err == nil && id == st.EphemeralOwner {
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
		events, err := chaos.ParseFile(r.logPath)
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

// expire ends session id from the server side, on the server the client
// is connected to (found with "cons"), as ZooKeeper expires a session: the
// reattach closes the holder's connection there, then the session is
// closed. It returns the server's index.
//
// Closing the session from another server while the holder's connection
// stays up is a different fault, a third party's kill of a healthy
// session: the holder and its successor then learn of it from the same
// commit, at the same moment, and no client can order the two (see the
// README's reliability section); the suite does not inject it.
func expire(ctx context.Context, ens *zktest.Cluster, id int64, pw []byte) (int, error) {
	sid := fmt.Sprintf("sid=0x%x,", id)
	for i, s := range ens.Servers() {
		out, err := zktest.FourLetterWord(ctx, s, "cons")
		if err != nil || !strings.Contains(out, sid) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return i, zktest.ExpireSession(sctx, s, id, pw)
	}
	return -1, errors.New("session_not_connected_to_any_server")
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
	conn, _, err := zk.Connect(ens.Servers(), 20*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	require.Eventually(t, func() bool { return conn.State() == zk.StateHasSession }, 30*time.Second, 10*time.Millisecond)
	return conn
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

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
func (r *run) summary(t *testing.T, seed uint64, start time.Time, rep chaos.Report, st chaos.StoreStats, sums []clientSummary, nodes int, ephemerals string) {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos summary (seed %d, %v of faults, load %s)\n", seed, time.Since(start).Round(time.Second), loadavg())
	fmt.Fprintf(&b, "  acquisitions: %d over %d clients %v; failed acquisitions: %d; leases lost: %d\n",
		rep.Acquisitions, len(rep.ByClient), sortedCounts(rep.ByClient), rep.Errors, rep.Losses)
	fmt.Fprintf(&b, "  faults: %v\n", sortedCounts(rep.Faults))
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

func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
