//go:build linux

package robustness_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/robustness"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

var (
	flagDuration  = flag.Duration("robustness.duration", 0, "how long to inject faults; 0 skips the fault run (every fault kind is injected at least once)")
	flagSeed      = flag.Uint64("robustness.seed", 0, "seed of the fault schedule (0: from the clock; the seed is printed)")
	flagClients   = flag.Int("robustness.clients", 3, "number of client processes (each runs every workload on sessions of its own)")
	flagWorkloads = flag.String("robustness.workloads", "mutex,semmutex,rwwrite,election,semaphore,queue,counter,sharedcount,watch", "workloads to run (watch follows sharedcount's node)")
	flagKeep      = flag.String("robustness.log", "", "copy the shared log to this file after the run")
	flagCheck     = flag.Duration("robustness.check-timeout", 2*time.Minute, "porcupine's time limit per history")
)

const sessionTimeout = 4 * time.Second

// The fault kinds.
const (
	leaderKill     = "leader-kill"     // SIGKILL the leader, restart it
	followerStop   = "follower-stop"   // SIGSTOP a follower, SIGCONT it
	expireSession  = "expire-session"  // expire one workload session of a client, server side
	blackholeShort = "blackhole-short" // cut a client off for less than the session timeout
	blackholeLong  = "blackhole-long"  // cut a client off for longer than the session timeout
	delay          = "delay"           // delay a client's traffic both ways
	clientKill     = "client-kill"     // SIGKILL a client process, start a replacement
	loseReplies    = "lose-replies"    // requests reach the server, its replies are lost, the connection resets
)

var faultKinds = []string{leaderKill, followerStop, expireSession, blackholeShort, blackholeLong, delay, clientKill, loseReplies}

// lockWorkloads are the workloads with one holder at a time, fenced
// writes, and the overlap check.
var lockWorkloads = map[string]bool{"mutex": true, "semmutex": true, "rwwrite": true, "election": true}

const semaphoreMax = 2

type run struct {
	rng       *rand.Rand
	ens       *zktest.Cluster
	bin, dir  string
	root      string
	logPath   string
	log       *chaos.Log
	workloads []string
	stores    map[string]*chaos.Store
	procs     []*proc
	next      int
}

func TestRobustness_RecipesUnderFaults(t *testing.T) {
	if *flagDuration <= 0 {
		t.Skip("the fault run needs -robustness.duration (make robustness, or scripts/test.sh's robustness stage)")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("robustness seed %d (rerun with -robustness.seed=%d), duration %v, %d clients, workloads %s", seed, seed, *flagDuration, *flagClients, *flagWorkloads)
	r := &run{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dir: t.TempDir(), root: fmt.Sprintf("/robustness/%d", seed),
		workloads: strings.Split(*flagWorkloads, ","), stores: map[string]*chaos.Store{}}
	r.bin = buildClient(t)
	r.ens = zktest.Start(t, zktest.WithSize(3))
	for _, w := range r.workloads {
		if lockWorkloads[w] {
			st, err := chaos.StartStore()
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			r.stores[w] = st
		}
	}
	r.logPath = filepath.Join(r.dir, "shared.log")
	var err error
	r.log, err = chaos.OpenLog(r.logPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.log.Close() })
	t.Cleanup(func() {
		if *flagKeep != "" {
			if b, err := os.ReadFile(r.logPath); err == nil {
				_ = os.WriteFile(*flagKeep, b, 0o644)
			}
		}
	})
	var obs *observer
	if slices.Contains(r.workloads, "watch") {
		obs = r.observe(t, r.root+"/sharedcount", r.root+"/queue")
	}
	for range *flagClients {
		r.startNext(t)
	}

	start := time.Now()
	for round := 0; round == 0 || time.Since(start) < *flagDuration; round++ {
		for _, i := range r.rng.Perm(len(faultKinds)) {
			if round > 0 && time.Since(start) >= *flagDuration {
				break
			}
			r.inject(t, faultKinds[i])
			time.Sleep(r.between(300*time.Millisecond, time.Second)) // a random gap in the schedule, not ordering
		}
	}
	for _, p := range r.procs {
		p.heal()
	}
	clientOps := map[string]int{} // as the clients that stopped count them
	for _, p := range r.procs {
		if p.killed {
			continue
		}
		sum, err := p.stop(30 * time.Second)
		if assert.NoError(t, err) {
			for w, n := range sum.Ops {
				clientOps[w] += n
			}
			assert.Empty(t, sum.Leaked, "goroutines left in client %s after Session.Close", p.id)
		}
	}

	events, err := chaos.ParseFile(r.logPath)
	require.NoError(t, err)
	faults := map[string]int{}
	for _, ev := range events {
		if ev.Kind == chaos.Fault {
			faults[ev.Actor]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "robustness summary (seed %d, %v of faults, %d client processes started)\n", seed, time.Since(start).Round(time.Second), r.next)
	fmt.Fprintf(&b, "  faults: %s\n", sortedCounts(faults))
	fmt.Fprintf(&b, "  calls made by the clients that stopped normally: %s\n", sortedCounts(clientOps))
	for _, w := range r.workloads {
		evs := robustness.ForWorkload(events, w)
		var model porcupine.Model
		var ops []porcupine.Operation
		switch w {
		case "counter":
			model, ops = robustness.CounterModel, robustness.CounterOperations(evs)
		case "sharedcount":
			model, ops = robustness.SharedCountModel, robustness.CounterOperations(evs)
		case "semaphore":
			model, ops = robustness.SemaphoreModel(semaphoreMax), robustness.LockOperations(evs)
		default:
			model, ops = robustness.LockModel, robustness.LockOperations(evs)
		}
		if w == "watch" {
			final, seen := obs.finish(t)
			rep := robustness.CheckWatch(events, "sharedcount")
			crep := robustness.CheckChildren(events)
			fmt.Fprintf(&b, "  watch (SharedCount node): %s\n", rep)
			fmt.Fprintf(&b, "  watch (Queue node, WatchChildren): %s\n", crep)
			fmt.Fprintf(&b, "    the test's own observers ended at (the node's final state): %s\n", endStates(final, seen))
			for _, v := range append(rep.Violations, crep.Violations...) {
				fmt.Fprintf(&b, "    VIOLATION %s\n", v)
			}
			assert.Empty(t, rep.Violations, "watch: states seen out of order or never written; seed %d", seed)
			assert.Empty(t, crep.Violations, "watch: listings out of order or inconsistent; seed %d", seed)
			assert.Equal(t, final, seen, "watch: an observer did not end at its node's final state")
			for _, recipe := range robustness.DataRecipes {
				assert.Positive(t, rep.ByRecipe[recipe], "watch: no state seen by a %s", recipe)
			}
			if slices.Contains(r.workloads, "queue") {
				assert.Positive(t, crep.Listed, "watch: no listing seen")
			}
			continue
		}
		if w == "queue" {
			rep := robustness.CheckQueue(evs, r.drain(t, r.root+"/queue"))
			fmt.Fprintf(&b, "  queue: %s\n", rep)
			for _, v := range rep.Violations() {
				fmt.Fprintf(&b, "    VIOLATION %s\n", v)
			}
			assert.Empty(t, rep.Violations(), "queue: items taken twice, never offered or lost; seed %d", seed)
			assert.Positive(t, rep.Taken, "queue: nothing taken")
			continue
		}
		res := robustness.Check(w, model, ops, *flagCheck, r.dir)
		fmt.Fprintf(&b, "  %s\n", res)
		assert.True(t, res.OK(), "%s: history not linearizable (%s); seed %d", w, res.Verdict, seed)
		assert.Positive(t, res.Operations-res.Open, "%s: no completed operation", w)
		if lockWorkloads[w] {
			rep := chaos.Check(evs)
			st := r.stores[w].Stats()
			fmt.Fprintf(&b, "    %s overlap check: %d acquisitions, %d leases lost, %d overlaps explained by an earlier loss signal, %d violations; store: %s\n",
				w, rep.Acquisitions, rep.Losses, rep.Explained, len(rep.Violations), st)
			for _, v := range rep.Violations {
				fmt.Fprintf(&b, "    VIOLATION %s\n", v)
			}
			assert.Empty(t, rep.Violations, "%s: overlaps not preceded by a loss signal; seed %d", w, seed)
			assert.Zero(t, st.OutOfOrder, "%s: writes accepted out of token order", w)
		}
	}
	t.Log(b.String())
	for _, k := range faultKinds {
		assert.Positive(t, faults[k], "fault %s never injected", k)
	}
}

// endStates formats the final states and the observers' last, by recipe.
func endStates(final, seen map[string]int64) string {
	var parts []string
	for _, recipe := range append(slices.Clone(robustness.DataRecipes), robustness.Children) {
		parts = append(parts, fmt.Sprintf("%s %d (%d)", recipe, seen[recipe], final[recipe]))
	}
	return strings.Join(parts, ", ")
}

func (r *run) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)))
}

func (r *run) startNext(t *testing.T) *proc {
	r.next++
	return r.startProc(t, fmt.Sprintf("p%d", r.next))
}

func (r *run) live() []*proc {
	var out []*proc
	for _, p := range r.procs {
		if p.alive() {
			out = append(out, p)
		}
	}
	return out
}

func (r *run) anyLive() *proc {
	live := r.live()
	return live[r.rng.IntN(len(live))]
}

// target picks the process a client fault hits, and the workload whose
// session an expiry ends: two times in three the holder of a random lock
// workload (as the shared log shows it now), else any live process and
// workload.
func (r *run) target(t *testing.T) (*proc, string) {
	var locks []string
	for _, w := range r.workloads {
		if lockWorkloads[w] {
			locks = append(locks, w)
		}
	}
	if len(locks) > 0 && r.rng.IntN(3) < 2 {
		w := locks[r.rng.IntN(len(locks))]
		events, err := chaos.ParseFile(r.logPath)
		require.NoError(t, err)
		holding := map[string]bool{}
		for _, ev := range robustness.ForWorkload(events, w) {
			switch ev.Kind {
			case chaos.Acquired:
				holding[ev.Actor] = true
			case chaos.Stop, chaos.Killed:
				delete(holding, ev.Actor)
			}
		}
		for _, p := range r.live() {
			if holding[p.id+"/"+w] {
				return p, w
			}
		}
	}
	return r.anyLive(), r.workloads[r.rng.IntN(len(r.workloads))]
}

// inject injects one fault and heals it.
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
		time.Sleep(r.between(2*time.Second, 5*time.Second))
		require.NoError(t, r.ens.Cont(f))
		require.NoError(t, r.ens.WaitServing(ctx, f))
	case expireSession:
		p, w := r.target(t)
		id, pw, err := p.session(r.dir, w)
		if err != nil {
			r.log.Add(chaos.Fault, kind, p.id+"/"+w, "no_session", errText(err))
			break
		}
		srv, err := expire(ctx, r.ens, id, pw)
		r.log.Add(chaos.Fault, kind, p.id+"/"+w, fmt.Sprintf("0x%x", id), "server", srv, errText(err))
	case blackholeShort, blackholeLong:
		p, _ := r.target(t)
		d := r.between(sessionTimeout/4, sessionTimeout/2)
		if kind == blackholeLong {
			d = r.between(sessionTimeout*3/2, sessionTimeout*2)
		}
		for _, px := range p.proxies {
			px.Blackhole()
		}
		r.log.Add(chaos.Fault, kind, p.id, d)
		time.Sleep(d)
		p.heal()
	case delay:
		p, _ := r.target(t)
		d := r.between(50*time.Millisecond, 400*time.Millisecond)
		for _, px := range p.proxies {
			px.SetDelay(d)
		}
		r.log.Add(chaos.Fault, kind, p.id, d)
		time.Sleep(r.between(time.Second, 3*time.Second))
		p.heal()
	case loseReplies:
		// ZOOKEEPER-1262: a change can happen while its reply is lost.
		// Shorter than the client's read timeout (2/3 of the session
		// timeout), so that the proxy's reset ends the connection.
		p, _ := r.target(t)
		hold := r.between(sessionTimeout/16, sessionTimeout/4)
		var lost []<-chan struct{}
		for _, px := range p.proxies {
			lost = append(lost, px.LoseRepliesAfter(r.rng.IntN(3), hold))
		}
		r.log.Add(chaos.Fault, kind, p.id, hold)
		deadline := time.After(hold + 2*sessionTimeout)
		for _, ch := range lost {
			select {
			case <-ch:
			case <-deadline:
			}
		}
		for _, px := range p.proxies {
			px.Disarm() // the connections it did not hit
		}
	case clientKill:
		p, _ := r.target(t)
		p.killed = true
		require.NoError(t, p.cmd.Process.Kill())
		<-p.exited
		r.log.Add(chaos.Killed, p.id)
		r.log.Add(chaos.Fault, kind, p.id)
		r.startNext(t)
	}
	r.log.Add(chaos.Heal, kind)
}

// observer runs, in the test process itself (through no proxy), an
// observer of each recipe of the watch workload, each of which must end at
// its node's final state.
type observer struct {
	last   map[string]*atomic.Int64 // recipe -> last data version or Pzxid seen (-1: none, 0: node missing)
	cancel context.CancelFunc
	done   sync.WaitGroup
	conn   *zk.Conn
	s      *zr.Session
	data   string // the shared count's node
	queue  string // the queue's node
	once   sync.Once
}

func (r *run) observe(t *testing.T, data, queue string) *observer {
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{cancel: cancel, data: data, queue: queue, last: map[string]*atomic.Int64{}}
	cctx, ccancel := context.WithTimeout(ctx, time.Minute)
	defer ccancel()
	var err error
	o.s, err = zr.Connect(cctx, r.ens.Servers(), zr.WithSessionTimeout(20*time.Second))
	require.NoError(t, err)
	o.conn, _, err = zk.Connect(r.ens.Servers(), 20*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	require.NoError(t, err)
	run := func(recipe string, follow func(actor string, last *atomic.Int64) error) {
		last := &atomic.Int64{}
		last.Store(-1)
		o.last[recipe] = last
		o.done.Add(1)
		go func() {
			defer o.done.Done()
			for i := 1; ctx.Err() == nil; i++ {
				_ = follow(robustness.ObserverActor("test", recipe, i), last)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond): // the recipe ended on an error: start again
				}
			}
		}()
	}
	for _, recipe := range robustness.DataRecipes {
		run(recipe, func(actor string, last *atomic.Int64) error {
			return robustness.ObserveData(ctx, o.s, recipe, data, func(b []byte, st *zr.NodeStat) {
				robustness.LogSeen(r.log, actor, b, st)
				last.Store(int64(st.Version))
			})
		})
	}
	run(robustness.Children, func(actor string, last *atomic.Int64) error {
		return robustness.ObserveChildren(ctx, o.s, queue, func(kids []string, st *zr.NodeStat) {
			robustness.LogListed(r.log, actor, kids, st)
			if st == nil {
				last.Store(0)
			} else {
				last.Store(st.Pzxid)
			}
		})
	})
	t.Cleanup(o.stop)
	return o
}

// finish waits until every observer saw its node's final state, for at
// most 30 s, stops them and returns those states by recipe, and what the
// observers saw last. The final states are read after a sync: the shared
// count's version, the queue's Pzxid, 0 for a queue node gone. They are
// read again every second: once empty, the queue's container node may be
// deleted by the server at any time.
func (o *observer) finish(t *testing.T) (final, seen map[string]int64) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		final = o.read(t)
		next := time.Now().Add(time.Second)
		for !o.saw(final) && time.Now().Before(next) {
			time.Sleep(20 * time.Millisecond) // polling the observers' last states
		}
		if o.saw(final) || time.Now().After(deadline) {
			break
		}
	}
	o.stop()
	seen = map[string]int64{}
	for recipe, l := range o.last {
		seen[recipe] = l.Load()
	}
	return final, seen
}

func (o *observer) saw(final map[string]int64) bool {
	for recipe, v := range final {
		if o.last[recipe].Load() != v {
			return false
		}
	}
	return true
}

// read reads the final states, after a sync.
func (o *observer) read(t *testing.T) map[string]int64 {
	_, err := o.conn.Sync(o.data)
	require.NoError(t, err)
	_, st, err := o.conn.Get(o.data)
	require.NoError(t, err)
	final := map[string]int64{}
	for _, recipe := range robustness.DataRecipes {
		final[recipe] = int64(st.Version)
	}
	_, err = o.conn.Sync(o.queue)
	if !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}
	_, qst, err := o.conn.Children(o.queue)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		final[robustness.Children] = 0
	case err == nil:
		final[robustness.Children] = qst.Pzxid
	default:
		require.NoError(t, err)
	}
	return final
}

func (o *observer) stop() {
	o.once.Do(func() {
		o.cancel()
		o.done.Wait()
		_ = o.s.Close()
		o.conn.Close()
	})
}

// drain takes every item left in the queue at path, once the clients
// stopped.
func (r *run) drain(t *testing.T, path string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := zr.Connect(ctx, r.ens.Servers())
	require.NoError(t, err)
	defer s.Close()
	q := zr.NewQueue(s, path)
	var left []string
	for {
		item, err := q.Poll(ctx)
		if errors.Is(err, zr.ErrQueueEmpty) {
			return left
		}
		require.NoError(t, err)
		left = append(left, string(item))
	}
}

// expire ends session id from the server side, on the server the client
// is connected to (found with "cons"), as ZooKeeper expires a session.
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

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
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

// buildClient builds ./client once per test (with -race when the test
// binary has it) and returns the binary's path.
func buildClient(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the go tool is needed to build the robustness client: %v", err)
		}
		t.Skipf("the go tool is needed to build the robustness client: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "robustness-client")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", append(args, "./client")...).CombinedOutput()
	if err != nil {
		t.Fatalf("building the robustness client: %v\n%s", err, out)
	}
	return bin
}

// proc is one client process with its own proxies, one per server.
type proc struct {
	id      string
	cmd     *exec.Cmd
	proxies []*zktest.Proxy
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	exited  chan struct{}
	waitErr error
	killed  bool
}

type clientSummary struct {
	ID     string         `json:"id"`
	Ops    map[string]int `json:"ops"`
	Leaked string         `json:"leaked,omitempty"`
}

func (r *run) startProc(t *testing.T, id string) *proc {
	t.Helper()
	p := &proc{id: id, exited: make(chan struct{})}
	var addrs []string
	for _, s := range r.ens.Servers() {
		px := zktest.NewProxy(t, s)
		p.proxies = append(p.proxies, px)
		addrs = append(addrs, px.Addr())
	}
	var stores []string
	for w, st := range r.stores {
		stores = append(stores, w+"="+st.Addr())
	}
	p.cmd = exec.Command(r.bin, "-servers", strings.Join(addrs, ","), "-root", r.root, "-id", id, "-log", r.logPath,
		"-workloads", strings.Join(r.workloads, ","), "-stores", strings.Join(stores, ","),
		"-session-timeout", sessionTimeout.String(), "-session-dir", r.dir, "-semaphore-max", strconv.Itoa(semaphoreMax),
		"-lifetime", (*flagDuration + 10*time.Minute).String())
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test binary
	require.NoError(t, p.cmd.Start(), "starting client %s", id)
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	r.procs = append(r.procs, p)
	return p
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return !p.killed
	}
}

func (p *proc) heal() {
	for _, px := range p.proxies {
		px.Heal()
		px.SetDelay(0)
	}
}

// session reads the current session id and password of the client's
// workload w.
func (p *proc) session(dir, w string) (int64, []byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, p.id+"."+w))
	if err != nil {
		return 0, nil, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, nil, fmt.Errorf("session file of %s/%s: %q", p.id, w, b)
	}
	id, err := strconv.ParseUint(f[0], 16, 64)
	if err != nil {
		return 0, nil, err
	}
	pw, err := hex.DecodeString(f[1])
	return int64(id), pw, err
}

// stop asks the client to finish (SIGTERM) and returns its summary.
func (p *proc) stop(timeout time.Duration) (clientSummary, error) {
	var sum clientSummary
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return sum, fmt.Errorf("client %s did not stop within %v after SIGTERM; stderr:\n%s", p.id, timeout, p.stderr.String())
	}
	if p.waitErr != nil {
		return sum, fmt.Errorf("client %s: %v; stderr:\n%s", p.id, p.waitErr, p.stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(p.stdout.Bytes()), &sum); err != nil {
		return sum, fmt.Errorf("client %s summary %q: %v", p.id, p.stdout.String(), err)
	}
	return sum, nil
}
