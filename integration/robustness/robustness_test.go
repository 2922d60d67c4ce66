//go:build linux

package robustness_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/internal/fleet"
	"github.com/zkrecipes/zkrecipes/integration/robustness"
)

var (
	flagDuration  = flag.Duration("robustness.duration", 0, "how long to inject faults; 0 skips the fault run (every fault kind is injected at least once)")
	flagSeed      = flag.Uint64("robustness.seed", 0, "seed of the fault schedule (0: from the clock; the seed is printed)")
	flagClients   = flag.Int("robustness.clients", 3, "number of client processes (each runs every workload on sessions of its own)")
	flagWorkloads = flag.String("robustness.workloads", "mutex,semmutex,rwwrite,election,semaphore,queue,workqueue,counter,sharedcount,watch", "workloads to run (watch follows sharedcount's node)")
	flagKeep      = flag.String("robustness.log", "", "copy the shared log to this file after the run")
	flagCheck     = flag.Duration("robustness.check-timeout", 2*time.Minute, "porcupine's time limit per history")
	flagHog       = flag.Int("robustness.cpu-hog", 0, "busy-looping processes to run beside the test for its whole length (a busy machine)")
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
	*fleet.Fleet
	root      string
	workloads []string
	stores    map[string]*chaos.Store
}

func TestRobustness_RecipesUnderFaults(t *testing.T) {
	faultRun(t, strings.Split(*flagWorkloads, ","))
}

// TestRobustness_WorkQueueUnderFaults is the fault run of the work queue
// workload alone (make robustness runs it with the others).
func TestRobustness_WorkQueueUnderFaults(t *testing.T) {
	faultRun(t, []string{"workqueue"})
}

// faultRun runs workloads under faults and checks their histories.
func faultRun(t *testing.T, workloads []string) {
	if *flagDuration <= 0 {
		t.Skip("the fault run needs -robustness.duration (make robustness, or scripts/test.sh's robustness stage)")
	}
	seed := fleet.Seed(*flagSeed)
	t.Logf("robustness seed %d (rerun with -robustness.seed=%d), duration %v, %d clients, workloads %s, %d CPU hogs", seed, seed, *flagDuration, *flagClients, strings.Join(workloads, ","), *flagHog)
	r := &run{root: fmt.Sprintf("/robustness/%d", seed), workloads: workloads, stores: map[string]*chaos.Store{}}
	r.Fleet = fleet.New(t.Context(), t, fleet.Config{Suite: "robustness", Seed: seed, Keep: *flagKeep, Prefix: "p", Args: r.clientArgs})
	t.Logf("if the run fails, its artifacts are kept in %s (set %s to choose where)", r.Keep, fleet.KeepEnv("robustness"))
	if *flagHog > 0 {
		fleet.Hog(t, *flagHog)
	}
	for _, w := range r.workloads {
		if lockWorkloads[w] {
			st, err := chaos.StartStore()
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			r.stores[w] = st
		}
	}
	var obs *observer
	if slices.Contains(r.workloads, "watch") {
		obs = r.observe(t, r.root+"/sharedcount", r.root+"/queue")
	}
	for range *flagClients {
		r.StartNext(t)
	}

	start := time.Now()
	require.NoError(t, r.Inject(t.Context(), *flagDuration, faultKinds, 300*time.Millisecond, time.Second, func(ctx context.Context, kind string) { r.inject(ctx, t, kind) }))
	clientOps := map[string]int{} // as the clients that stopped count them
	var stopped []string          // the clients that stopped normally, closing their Sessions
	for _, sum := range fleet.StopAll[robustness.Summary](t.Context(), t, r.Fleet) {
		stopped = append(stopped, sum.ID)
		for w, n := range sum.Ops {
			clientOps[w] += n
		}
	}
	var workLocks [2][]string // the work queue's locks left at close, and after expiry
	if slices.Contains(r.workloads, "workqueue") {
		workLocks = r.workQueueLocks(t, r.root+"/workqueue-locks", stopped)
	}

	events, err := chaos.ParseFile(r.LogPath)
	require.NoError(t, err)
	faults := map[string]int{}
	for _, ev := range events {
		if ev.Kind == chaos.Fault {
			faults[ev.Actor]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "robustness summary (seed %d, %v of faults, %d client processes started, %d CPU hogs)\n", seed, time.Since(start).Round(time.Second), len(r.Procs), *flagHog)
	type history struct {
		w     string
		model porcupine.Model
		ops   []porcupine.Operation
	}
	var histories []history
	defer func() { // for study: the histories as porcupine saw them, and its pages
		if !t.Failed() {
			return
		}
		for _, h := range histories {
			if err := robustness.Keep(r.Dir, h.w, h.model, h.ops, *flagCheck); err != nil {
				t.Logf("keeping the %s history: %v", h.w, err)
			}
		}
	}()
	fmt.Fprintf(&b, "  faults: %s\n", fleet.SortedCounts(faults))
	fmt.Fprintf(&b, "  calls made by the clients that stopped normally: %s\n", fleet.SortedCounts(clientOps))
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
			assert.Empty(t, rep.Violations, "watch: states seen out of order or never written; seed %d, artifacts in %s", seed, r.Keep)
			assert.Empty(t, crep.Violations, "watch: listings out of order or inconsistent; seed %d, artifacts in %s", seed, r.Keep)
			assert.Equal(t, final, seen, "watch: an observer did not end at its node's final state")
			for _, recipe := range robustness.DataRecipes {
				assert.Positive(t, rep.ByRecipe[recipe], "watch: no state seen by a %s", recipe)
			}
			if slices.Contains(r.workloads, "queue") {
				assert.Positive(t, crep.Listed, "watch: no listing seen")
			}
			continue
		}
		if w == "workqueue" {
			rep := robustness.CheckWorkQueue(evs, r.drainWork(t, r.root+"/workqueue"), workLocks[0], workLocks[1])
			ops := robustness.WorkQueueOperations(evs)
			res := robustness.Check(w, robustness.WorkQueueModel, ops, *flagCheck, r.Dir)
			histories = append(histories, history{w, robustness.WorkQueueModel, ops})
			fmt.Fprintf(&b, "  %s\n    workqueue: %s\n", res, rep)
			for _, v := range rep.Violations() {
				fmt.Fprintf(&b, "    VIOLATION %s\n", v)
			}
			assert.True(t, res.OK(), "workqueue: history not linearizable (%s); seed %d, artifacts in %s", res.Verdict, seed, r.Keep)
			assert.Empty(t, rep.Violations(), "workqueue: items lost, taken while held, or locks left; seed %d, artifacts in %s", seed, r.Keep)
			assert.Positive(t, rep.Acked, "workqueue: nothing acked")
			continue
		}
		if w == "queue" {
			rep := robustness.CheckQueue(evs, r.drain(t, r.root+"/queue"))
			fmt.Fprintf(&b, "  queue: %s\n", rep)
			for _, v := range rep.Violations() {
				fmt.Fprintf(&b, "    VIOLATION %s\n", v)
			}
			assert.Empty(t, rep.Violations(), "queue: items taken twice, never offered or lost; seed %d, artifacts in %s", seed, r.Keep)
			assert.Positive(t, rep.Taken, "queue: nothing taken")
			continue
		}
		histories = append(histories, history{w, model, ops})
		res := robustness.Check(w, model, ops, *flagCheck, r.Dir)
		fmt.Fprintf(&b, "  %s\n", res)
		assert.True(t, res.OK(), "%s: history not linearizable (%s); seed %d, artifacts in %s", w, res.Verdict, seed, r.Keep)
		assert.Positive(t, res.Operations-res.Open, "%s: no completed operation", w)
		if lockWorkloads[w] {
			rep := chaos.Check(evs)
			st := r.stores[w].Stats()
			fmt.Fprintf(&b, "    %s overlap check: %d acquisitions, %d leases lost, %d overlaps explained by an earlier loss signal, %d leases logged after a higher token and lost (longest believed held %v), %d violations; store: %s\n",
				w, rep.Acquisitions, rep.Losses, rep.Explained, rep.LateReports, rep.MaxLateReport, len(rep.Violations), st)
			for _, v := range rep.Violations {
				fmt.Fprintf(&b, "    VIOLATION %s\n", v)
			}
			assert.Empty(t, rep.Violations, "%s: overlaps not preceded by a loss signal; seed %d, artifacts in %s", w, seed, r.Keep)
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

// clientArgs returns the command line of client id, given its proxies.
func (r *run) clientArgs(id, servers string) []string {
	var stores []string
	for w, st := range r.stores {
		stores = append(stores, w+"="+st.Addr())
	}
	return []string{"-servers", servers, "-root", r.root, "-id", id, "-log", r.LogPath,
		"-workloads", strings.Join(r.workloads, ","), "-stores", strings.Join(stores, ","),
		"-session-timeout", sessionTimeout.String(), "-session-dir", r.Dir, "-semaphore-max", strconv.Itoa(semaphoreMax),
		"-lib-log", filepath.Join(r.Dir, id+".lib.log"),
		"-lifetime", (*flagDuration + 10*time.Minute).String()}
}

// target picks the process a client fault hits, and the workload whose
// session an expiry ends: two times in three the holder of a random lock
// workload (as the shared log shows it now), else any live process and
// workload.
func (r *run) target(t *testing.T) (*fleet.Proc, string) {
	var locks []string
	for _, w := range r.workloads {
		if lockWorkloads[w] {
			locks = append(locks, w)
		}
	}
	if len(locks) > 0 && r.Rng.IntN(3) < 2 {
		w := locks[r.Rng.IntN(len(locks))]
		events, err := chaos.ParseFile(r.LogPath)
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
		for _, p := range r.Live() {
			if holding[p.ID+"/"+w] {
				return p, w
			}
		}
	}
	return r.AnyLive(), r.workloads[r.Rng.IntN(len(r.workloads))]
}

// inject injects one fault and heals it.
func (r *run) inject(ctx context.Context, t *testing.T, kind string) {
	t.Helper()
	switch kind {
	case leaderKill:
		require.NoError(t, r.KillLeader(ctx, kind))
	case followerStop:
		require.NoError(t, r.StopFollower(ctx, kind, 2*time.Second, 5*time.Second))
	case expireSession:
		p, w := r.target(t)
		id, pw, err := fleet.ReadSession(filepath.Join(r.Dir, p.ID+"."+w))
		if err != nil {
			r.Log.Add(chaos.Fault, kind, p.ID+"/"+w, "no_session", fleet.ErrText(err))
			break
		}
		r.Expire(ctx, kind, p.ID+"/"+w, id, pw)
	case blackholeShort, blackholeLong:
		p, _ := r.target(t)
		d := r.Between(sessionTimeout/4, sessionTimeout/2)
		if kind == blackholeLong {
			d = r.Between(sessionTimeout*3/2, sessionTimeout*2)
		}
		require.NoError(t, r.Blackhole(ctx, kind, p, d))
	case delay:
		p, _ := r.target(t)
		d := r.Between(50*time.Millisecond, 400*time.Millisecond)
		p.SetDelay(d)
		r.Log.Add(chaos.Fault, kind, p.ID, d)
		time.Sleep(r.Between(time.Second, 3*time.Second))
		p.Heal()
	case loseReplies:
		// ZOOKEEPER-1262: a change can happen while its reply is lost.
		// Shorter than the client's read timeout (2/3 of the session
		// timeout), so that the proxy's reset ends the connection.
		p, _ := r.target(t)
		hold := r.Between(sessionTimeout/16, sessionTimeout/4)
		var lost []<-chan struct{}
		for _, px := range p.Proxies() {
			lost = append(lost, px.LoseRepliesAfter(r.Rng.IntN(3), hold))
		}
		r.Log.Add(chaos.Fault, kind, p.ID, hold)
		// One deadline for all of them: once it has passed, the
		// connections still armed are disarmed below.
		wait, cancel := context.WithTimeout(ctx, hold+2*sessionTimeout)
		for _, ch := range lost {
			select {
			case <-ch:
			case <-wait.Done():
			}
		}
		cancel()
		p.Disarm() // the connections it did not hit
	case clientKill:
		p, _ := r.target(t)
		require.NoError(t, r.Replace(ctx, t, kind, p, 0))
	}
	r.Log.Add(chaos.Heal, kind)
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
	one    *zr.Session // without the wire layer: the caches on one-shot watches (robustness.OneShot)
	data   string      // the shared count's node
	queue  string      // the queue's node
	once   sync.Once
}

func (r *run) observe(t *testing.T, data, queue string) *observer {
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{cancel: cancel, data: data, queue: queue, last: map[string]*atomic.Int64{}}
	cctx, ccancel := context.WithTimeout(ctx, time.Minute)
	defer ccancel()
	var err error
	o.s, err = zr.Connect(cctx, r.Ens.Servers(), zr.WithSessionTimeout(20*time.Second))
	require.NoError(t, err)
	o.one, err = zr.Connect(cctx, r.Ens.Servers(), zr.WithSessionTimeout(20*time.Second), zr.WithWireLayer(false))
	require.NoError(t, err)
	o.conn, _, err = zk.Connect(r.Ens.Servers(), 20*time.Second, zk.WithLogInfo(false), zk.WithLogger(fleet.Quiet{}))
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
		on := o.s
		if robustness.OneShot(recipe) {
			on = o.one
		}
		run(recipe, func(actor string, last *atomic.Int64) error {
			return robustness.ObserveData(ctx, on, recipe, data, func(b []byte, st *zr.NodeStat) {
				robustness.LogSeen(r.Log, actor, b, st)
				last.Store(int64(st.Version))
			})
		})
	}
	run(robustness.Children, func(actor string, last *atomic.Int64) error {
		return robustness.ObserveChildren(ctx, o.s, queue, func(kids []string, st *zr.NodeStat) {
			robustness.LogListed(r.Log, actor, kids, st)
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
		_ = o.one.Close()
		o.conn.Close()
	})
}

// workQueueLocks lists the work queue's lock nodes (under locks) left once
// the clients stopped: first those owned by the last session of a client
// that stopped normally (its Close should have deleted them), then, after
// waiting up to three session timeouts for the sessions of the killed
// clients to expire, every one still there.
func (r *run) workQueueLocks(t *testing.T, locks string, stopped []string) [2][]string {
	conn, _, err := zk.Connect(r.Ens.Servers(), 20*time.Second, zk.WithLogInfo(false), zk.WithLogger(fleet.Quiet{}))
	require.NoError(t, err)
	defer conn.Close()
	closed := map[int64]string{}
	for _, id := range stopped {
		if sid, _, err := fleet.ReadSession(filepath.Join(r.Dir, id+".workqueue")); err == nil {
			closed[sid] = id
		}
	}
	var out [2][]string
	list := func() []string {
		_, err := conn.Sync(locks)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		require.NoError(t, err)
		kids, _, err := conn.Children(locks)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		require.NoError(t, err)
		return kids
	}
	for _, k := range list() {
		_, st, err := conn.Get(locks + "/" + k)
		if err == nil && closed[st.EphemeralOwner] != "" {
			out[0] = append(out[0], fmt.Sprintf("%s (session 0x%x of %s)", k, st.EphemeralOwner, closed[st.EphemeralOwner]))
		}
	}
	deadline := time.Now().Add(3*sessionTimeout + 5*time.Second)
	for {
		left := list()
		if len(left) == 0 || time.Now().After(deadline) {
			out[1] = left
			return out
		}
		time.Sleep(200 * time.Millisecond) // polling the server for the expiries
	}
}

// drainWork takes and acks every item left in the work queue at path,
// once the clients stopped and their locks went, and returns them.
func (r *run) drainWork(t *testing.T, path string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := zr.Connect(ctx, r.Ens.Servers())
	require.NoError(t, err)
	defer s.Close()
	q := zr.NewWorkQueue(s, path)
	var left []string
	for {
		// An empty queue makes Take wait: a few seconds without an item
		// is the end of it.
		tctx, tcancel := context.WithTimeout(ctx, 3*time.Second)
		wi, err := q.Take(tctx)
		tcancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return left
		}
		require.NoError(t, err)
		left = append(left, string(wi.Data()))
		require.NoError(t, wi.Ack(ctx))
	}
}

// drain takes every item left in the queue at path, once the clients
// stopped.
func (r *run) drain(t *testing.T, path string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := zr.Connect(ctx, r.Ens.Servers())
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
