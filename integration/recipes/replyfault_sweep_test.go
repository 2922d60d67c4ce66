package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The reply-fault sweep (issue 29): every public operation that writes is
// run with a fault on the k-th reply to one of its requests, for every k up
// to the number of requests it makes in a fault-free run, and its promise
// is checked:
//
//   - lose: the k-th reply and everything after it are withheld, then the
//     connection is reset (ZOOKEEPER-1262: the request executed, the client
//     never learns it); the Session reconnects on the same session.
//   - lose-suspended: the same on a Session with the default LoseOnSuspended
//     policy, where the reset ends every lease: the operation must still
//     report honestly what it did.
//   - hold: the k-th reply (executed by the server) and everything after it
//     are held while another client makes a competing change (it deletes
//     the recipe's node, writes the value, takes the queue's head, ...),
//     then delivered in order.
//
// Each cell checks what the operation's doc comment promises: the outcome
// reported honestly (never "not done" when done, never "done" when not), no
// node left behind or duplicated, ctx honoured within a bound, and a Mutex
// lease held on the same Session (on another path) untouched: except in
// lose-suspended, the Session uses LoseOnLost, so a reconnection on the
// same session must not end it. A cell whose session expired is not judged.
//
// Cells run concurrently, each with its own proxy, Session and path; the
// table of results is logged, and written to $ZKRECIPES_SWEEP_TABLE when
// set. Under -short only the first and the last k of each operation run.

const (
	sweepOpBound   = 8 * time.Second        // the operation's ctx deadline
	sweepSession   = 10 * time.Second       // the Sessions' timeout: a loaded machine must not expire them
	sweepSlack     = 3 * time.Second        // how late past it a return may come
	sweepLoseHold  = 150 * time.Millisecond // from a lost reply to the reset
	sweepSettle    = 5 * time.Second        // time given to background clean-up
	sweepParallel  = 6
	sweepSetupTime = 10 * time.Second
)

// sweepEnv is one cell's world.
type sweepEnv struct {
	path  string
	s     *zr.Session
	sid   int64
	obs   *zk.Conn
	peer  *zr.Session // a fault-free Session, for a second participant
	fault string      // "none", "lose", "lose-suspended" or "hold"

	competed bool // the competing change was made
	leases   []*zr.Lease
	state    map[string]any
	notes    []string
	mu       sync.Mutex
}

func (e *sweepEnv) set(k string, v any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state[k] = v
}

func (e *sweepEnv) get(k string) any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state[k]
}

func (e *sweepEnv) note(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

// sweepOp is one operation of the sweep.
type sweepOp struct {
	name  string
	setup func(ctx context.Context, e *sweepEnv) error
	// run is the operation, on e.s.
	run func(ctx context.Context, e *sweepEnv) error
	// compete is the competing change made while a reply is held (nil:
	// none, the reply is only delayed).
	compete func(e *sweepEnv)
	// pre, when set, runs in every cell while the operation's first reply
	// is held (a change that drives the operation down another path); the
	// faults then count from the reply after it.
	pre func(e *sweepEnv)
	// check returns the promises broken, given run's error.
	check    func(e *sweepEnv, err error) []string
	teardown func(e *sweepEnv)
}

// sweepCell is one run of an operation under one fault.
type sweepCell struct {
	op       string
	fault    string
	k        int
	reached  bool // the fault took its reply
	expired  bool // the session ended during the cell: the cell is not judged
	problems []string
	notes    []string
	replies  int // request replies the operation got (fault "none")
	traced   int // operations the Tracer saw (fault "none")
	elapsed  time.Duration
}

func (c sweepCell) result() string {
	switch {
	case c.expired:
		return "session expired, not judged"
	case len(c.problems) > 0:
		return "FAIL"
	case c.fault != "none" && !c.reached:
		return "not reached"
	default:
		return "pass"
	}
}

func TestReplyFaultSweep_EveryWriteKeepsItsPromiseUnderALostOrHeldReply(t *testing.T) {
	srv := server(t)
	obs := raw(t, srv)
	peer := connect(t, srv, nil)
	root := testPath(t)
	_ = deleteTree(obs, root)
	for _, p := range []string{"/t", root} {
		if _, err := obs.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	t.Cleanup(func() { _ = deleteTree(obs, root) })

	ops := sweepOps()
	if only := os.Getenv("ZKRECIPES_SWEEP_OPS"); only != "" {
		var keep []sweepOp
		for _, op := range ops {
			if strings.Contains(","+only+",", ","+op.name+",") {
				keep = append(keep, op)
			}
		}
		ops = keep
		if len(ops) == 0 {
			t.Fatalf("ZKRECIPES_SWEEP_OPS=%q names no operation of the sweep", only)
		}
	}
	run := func(op sweepOp, fault string, k int) sweepCell {
		return runSweepCell(srv, obs, peer.Session, root, op, fault, k)
	}

	// Fault-free runs first: the number of requests, and a check that the
	// harness's own expectations hold.
	calib := make([]sweepCell, len(ops))
	parallelDo(len(ops), sweepParallel, func(i int) { calib[i] = run(ops[i], "none", 0) })

	type job struct {
		op    int
		fault string
		k     int
	}
	var jobs []job
	for i, c := range calib {
		n := max(c.replies, c.traced) // they may differ by a background request
		for k := 1; k <= n; k++ {
			if testing.Short() && k != 1 && k != n {
				continue
			}
			jobs = append(jobs, job{i, "lose", k}, job{i, "lose-suspended", k}, job{i, "hold", k})
		}
	}
	cells := make([]sweepCell, len(jobs))
	parallelDo(len(jobs), sweepParallel, func(j int) {
		cells[j] = run(ops[jobs[j].op], jobs[j].fault, jobs[j].k)
	})

	for _, c := range append(calib, cells...) {
		t.Run(fmt.Sprintf("%s/%s-%d", c.op, c.fault, c.k), func(t *testing.T) {
			for _, n := range c.notes {
				t.Log(n)
			}
			for _, p := range c.problems {
				t.Errorf("promise broken: %s", p)
			}
			// Cells the sweep cannot judge must not hide an operation it
			// never faulted: each makes a request, and its first reply is
			// always there to take.
			if c.fault == "none" && max(c.replies, c.traced) == 0 {
				t.Errorf("harness: the fault-free run counted no request reply, so no fault was tried")
			}
			if c.fault != "none" && c.k == 1 && !c.reached && !c.expired {
				t.Errorf("harness: the fault never took the first reply")
			}
		})
	}
	table := sweepTable(calib, cells)
	t.Log("\n" + table)
	if out := os.Getenv("ZKRECIPES_SWEEP_TABLE"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Errorf("write the table: %v", err)
		}
	}
}

// parallelDo runs f(0..n-1) on at most par goroutines and waits.
func parallelDo(n, par int, f func(int)) {
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

// sweepTable renders the results: one row per operation, one column per
// fault, each cell listing k: result.
func sweepTable(calib, cells []sweepCell) string {
	var b strings.Builder
	b.WriteString("| operation | requests (proxy/tracer) | fault-free | lose k-th reply | lose k-th reply, LoseOnSuspended | hold k-th reply past a competing change |\n|---|---|---|---|---|---|\n")
	for _, c := range calib {
		col := func(fault string) string {
			var parts []string
			for _, x := range cells {
				if x.op == c.op && x.fault == fault {
					parts = append(parts, fmt.Sprintf("%d: %s", x.k, x.result()))
				}
			}
			if len(parts) == 0 {
				return "not run"
			}
			return strings.Join(parts, ", ")
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %s | %s | %s | %s |\n", c.op, c.replies, c.traced, c.result(), col("lose"), col("lose-suspended"), col("hold"))
	}
	return b.String()
}

// runSweepCell runs op once under fault on its k-th request reply ("none":
// no fault, counting the requests), and never calls t: its findings are
// returned.
func runSweepCell(srv *zktest.Cluster, obs *zk.Conn, peer *zr.Session, root string, op sweepOp, fault string, k int) (cell sweepCell) {
	cell = sweepCell{op: op.name, fault: fault, k: k}
	fail := func(format string, args ...any) {
		cell.problems = append(cell.problems, fmt.Sprintf(format, args...))
	}
	p, err := zktest.ListenProxy(srv.Servers()[0])
	if err != nil {
		fail("harness: proxy: %v", err)
		return
	}
	defer func() { _ = p.Close() }()
	var tracing atomic.Bool
	var traced atomic.Int64
	tr := zr.TracerFunc(func(zr.TraceEvent) {
		if tracing.Load() {
			traced.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), sweepSetupTime)
	defer cancel()
	policy := zr.LoseOnLost
	if fault == "lose-suspended" {
		policy = zr.LoseOnSuspended
	}
	opts := append([]zr.SessionOption{zr.WithSessionTimeout(sweepSession), zr.WithLossPolicy(policy), zr.WithTracer(tr)}, wireLayer()...)
	s, err := zr.Connect(ctx, []string{p.Addr()}, opts...)
	if err != nil {
		fail("harness: connect: %v", err)
		return
	}
	defer func() { _ = s.Close() }()
	// A session that expires (a reconnection slower than the session
	// timeout: the machine, not the library) voids the cell.
	subCtx, unsubscribe := context.WithCancel(context.Background())
	changes, _ := s.Subscribe(subCtx)
	defer unsubscribe()
	var lostState atomic.Bool
	go func() {
		for c := range changes {
			if c.State == zr.StateLost {
				lostState.Store(true)
			}
		}
	}()
	e := &sweepEnv{
		path: fmt.Sprintf("%s/%s-%s%d", root, unsafe.ReplaceAllString(op.name, "_"), fault, k),
		s:    s, sid: s.SessionID(), obs: obs, peer: peer, fault: fault, state: map[string]any{},
	}
	if _, err := obs.Create(e.path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		fail("harness: create %s: %v", e.path, err)
		return
	}
	bystander, err := zr.NewMutex(s, e.path+"-bystander").Acquire(ctx)
	if err != nil {
		fail("harness: bystander lease: %v", err)
		return
	}
	if op.setup != nil {
		if err := op.setup(ctx, e); err != nil {
			fail("harness: setup: %v", err)
			return
		}
	}
	if op.teardown != nil {
		defer op.teardown(e)
	}

	// A round trip after the setup's requests: their replies (and those of
	// any request the bystander's acquisition sent beside its own) are in
	// before the count starts.
	if _, _, err := s.Conn().Exists("/"); err != nil {
		fail("harness: round trip: %v", err)
		return
	}
	base := p.RequestReplies()
	arm := func() *zktest.ReplyFault {
		switch fault {
		case "lose", "lose-suspended":
			return p.LoseRequestReply(k, sweepLoseHold)
		case "hold":
			return p.HoldRequestReply(k)
		}
		return nil
	}
	var pre, f *zktest.ReplyFault
	if op.pre != nil {
		pre = p.HoldRequestReply(1)
	} else {
		f = arm()
	}
	tracing.Store(true)
	octx, ocancel := context.WithTimeout(context.Background(), sweepOpBound)
	defer ocancel()
	deadline, _ := octx.Deadline()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- op.run(octx, e) }()
	var opErr error
	returned := false
	if pre != nil {
		select {
		case <-pre.Hit():
			op.pre(e)
			f = arm()
		case opErr = <-done:
			returned = true
			fail("harness: the operation returned (%v) before its first reply", opErr)
		}
		pre.Release()
	}
	if f != nil && fault == "hold" && !returned {
		select {
		case <-f.Hit():
			if op.compete != nil {
				op.compete(e)
				e.competed = true
			}
			f.Release()
		case opErr = <-done:
			returned = true
			f.Release()
		}
	}
	if !returned {
		select {
		case opErr = <-done:
		case <-time.After(time.Until(deadline) + sweepSlack):
			fail("ctx not honoured: no return %v after the deadline", sweepSlack)
			select {
			case opErr = <-done:
			case <-time.After(10 * time.Second):
				fail("still no return 10s later; the cell is abandoned")
				return
			}
		}
	}
	cell.elapsed = time.Since(start)
	if late := time.Since(deadline); late > sweepSlack {
		fail("returned %v after ctx's deadline", late.Round(time.Millisecond))
	}
	tracing.Store(false)
	if f != nil {
		select {
		case <-f.Hit():
			cell.reached = true
		default:
		}
	} else {
		cell.replies = p.RequestReplies() - base
		if pre != nil {
			cell.replies-- // the fault counts after the first reply
		}
		cell.traced = int(traced.Load())
	}
	if opErr != nil {
		e.note("operation returned: %v", opErr)
	}
	cell.problems = append(cell.problems, op.check(e, opErr)...)
	select {
	case <-bystander.Done():
		if fault == "lose-suspended" { // the reset suspends the Session: every lease ends
			e.note("the other lease ended, as LoseOnSuspended says: %v", bystander.Err())
		} else {
			fail("the Session's other lease ended: %v", bystander.Err())
		}
	default:
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	_ = bystander.Release(rctx)
	cell.notes = e.notes
	if lostState.Load() || s.SessionID() != e.sid {
		cell.expired = true
		cell.notes = append(cell.notes, fmt.Sprintf("not judged: the session expired; it would have said %v", cell.problems))
		cell.problems = nil
	}
	if fault == "none" && cell.replies == 0 {
		fail("harness: the operation made no request")
	}
	return cell
}

// --- checks shared by the operations ---

// owned lists the ephemeral nodes of e's Session under e.path (three
// levels deep).
func (e *sweepEnv) owned() []string {
	var out []string
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		kids, _, err := e.obs.Children(p)
		if err != nil {
			return
		}
		for _, k := range kids {
			c := p + "/" + k
			if _, st, err := e.obs.Get(c); err == nil && st.EphemeralOwner == e.sid {
				out = append(out, c)
			}
			if depth > 1 {
				walk(c, depth-1)
			}
		}
	}
	walk(e.path, 3)
	sort.Strings(out)
	return out
}

// eventually polls cond until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func exists(obs *zk.Conn, p string) bool {
	ok, _, err := obs.Exists(p)
	return err == nil && ok
}

// deleteOwned is the competing change of the lock-like recipes: another
// client deletes the nodes of e's Session.
func deleteOwned(e *sweepEnv) {
	var deleted []string
	for _, p := range e.owned() {
		if e.obs.Delete(p, -1) == nil {
			deleted = append(deleted, p)
		}
	}
	e.set("deleted", deleted)
}

func ctxOrConn(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrSessionMoved)
}

// --- the operations ---

func sweepOps() []sweepOp {
	mutex := func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
		l, err := zr.NewMutex(e.s, e.path).Acquire(ctx)
		return leases(l), err
	}
	rwWrite := func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
		l, err := zr.NewRWMutex(e.s, e.path).WriteLock().Acquire(ctx)
		return leases(l), err
	}
	rwRead := func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
		l, err := zr.NewRWMutex(e.s, e.path).ReadLock().Acquire(ctx)
		return leases(l), err
	}
	semaphore := func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
		return zr.NewSemaphore(e.s, e.path, 2).Acquire(ctx, 1)
	}
	semMutex := func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
		l, err := zr.NewSemaphoreMutex(e.s, e.path).Acquire(ctx)
		return leases(l), err
	}
	multi := func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
		l, err := zr.NewMultiLock(zr.NewMutex(e.s, e.path+"/a"), zr.NewMutex(e.s, e.path+"/b")).Acquire(ctx)
		return leases(l), err
	}
	campaign := func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
		el := zr.NewElection(e.s, e.path, zr.WithParticipantID("sweep"), zr.WithProclaim(true))
		e.set("election", el)
		l, err := el.Campaign(ctx)
		return leases(l), err
	}
	resign := func(ctx context.Context, e *sweepEnv) error {
		return e.get("election").(*zr.Election).Resign(ctx)
	}
	ops := []sweepOp{
		lockAcquireOp("Mutex.Acquire", 1, mutex),
		lockAcquireOp("Mutex.Acquire(no parent)", 1, func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
			l, err := zr.NewMutex(e.s, e.path+"/x/m").Acquire(ctx) // creates the containers
			return leases(l), err
		}),
		lockAcquireOp("Mutex.TryAcquire", 1, func(ctx context.Context, e *sweepEnv) ([]*zr.Lease, error) {
			l, err := zr.NewMutex(e.s, e.path).TryAcquire(ctx)
			return leases(l), err
		}),
		lockReleaseOp("Mutex.Release", mutex, nil),
		lockAcquireOp("RWMutex.WriteLock.Acquire", 1, rwWrite),
		lockReleaseOp("RWMutex.WriteLock.Release", rwWrite, nil),
		lockAcquireOp("RWMutex.ReadLock.Acquire", 1, rwRead),
		lockReleaseOp("RWMutex.ReadLock.Release", rwRead, nil),
		lockAcquireOp("Semaphore.Acquire", 1, semaphore),
		lockReleaseOp("Semaphore.Release", semaphore, nil),
		lockAcquireOp("SemaphoreMutex.Acquire", 1, semMutex),
		lockReleaseOp("SemaphoreMutex.Release", semMutex, nil),
		lockAcquireOp("MultiLock.Acquire", 2, multi),
		lockReleaseOp("MultiLock.Release", multi, nil),
		lockAcquireOp("Election.Campaign", 1, campaign),
		lockReleaseOp("Election.Resign", campaign, resign),
		proclaimOp(),
		sharedOp("SharedCount.Set", false, false),
		sharedOp("SharedCount.TrySet", false, true),
		sharedOp("SharedValue.Set", true, false),
		sharedOp("SharedValue.TrySet", true, true),
		counterOp("AtomicCounter.Add", false),
		counterOp("AtomicCounter.Add(promoted)", true),
		queueOfferOp(true),
		queueOfferOp(false),
		queueTakeOp(),
		workQueuePutOp(),
		workQueueTakeOp(),
		workQueueEndOp(false),
		workQueueEndOp(true),
		workQueueRemoveOp(),
		barrierOp("Barrier.Set", true),
		barrierOp("Barrier.Set(no parent)", true),
		barrierOp("Barrier.Remove", false),
		doubleBarrierOp("DoubleBarrier.Enter", true, false),
		doubleBarrierOp("DoubleBarrier.Leave(lowest)", false, true),
		doubleBarrierOp("DoubleBarrier.Leave(not-lowest)", false, false),
	}
	return append(ops, keeperOps()...)
}

func leases(l *zr.Lease) []*zr.Lease {
	if l == nil {
		return nil
	}
	return []*zr.Lease{l}
}

// lockAcquireOp: acquired with exactly want nodes of the Session (or, after
// the competing change deleted them, a lease that reports its loss), or not
// acquired and no node left.
func lockAcquireOp(name string, want int, acq func(context.Context, *sweepEnv) ([]*zr.Lease, error)) sweepOp {
	return sweepOp{
		name: name,
		run: func(ctx context.Context, e *sweepEnv) error {
			ls, err := acq(ctx, e)
			e.leases = ls
			return err
		},
		compete: deleteOwned,
		check: func(e *sweepEnv, err error) []string {
			var out []string
			if err != nil {
				if len(e.leases) > 0 {
					out = append(out, fmt.Sprintf("an error (%v) with %d leases", err, len(e.leases)))
				}
				if !eventually(sweepSettle, func() bool { return len(e.owned()) == 0 }) {
					out = append(out, fmt.Sprintf("not acquired (%v) but nodes left: %v", err, e.owned()))
				}
				switch {
				case e.fault == "lose-suspended" && errors.Is(err, zr.ErrLockLost):
					e.note("a lease taken on the way was lost to the suspension (as the doc says): %v", err)
				case !e.competed:
					out = append(out, fmt.Sprintf("an uncontended acquisition failed: %v", err))
				}
				return out
			}
			if len(e.leases) == 0 {
				return []string{"acquired with no lease"}
			}
			lost := func() bool {
				for _, l := range e.leases {
					select {
					case <-l.Done():
						return true
					default:
					}
				}
				return false
			}
			var nodes []string
			if eventually(sweepSettle, func() bool { nodes = e.owned(); return lost() || len(nodes) == want }) && lost() {
				switch {
				case e.fault == "lose-suspended":
					e.note("lease lost after the suspension: %v", e.leases[0].Err())
				case !e.competed:
					out = append(out, fmt.Sprintf("lease lost without a competing change: %v", e.leases[0].Err()))
				}
				return out
			}
			if len(nodes) != want {
				out = append(out, fmt.Sprintf("acquired, holds %d nodes, want %d: %v", len(nodes), want, nodes))
			}
			// Held and not lost: each lease's token must be the czxid of a
			// node of the Session that is still there (not one the competing
			// change deleted).
			czxids := map[int64]bool{}
			for _, n := range nodes {
				if _, st, err := e.obs.Get(n); err == nil {
					czxids[st.Czxid] = true
				}
			}
			for _, l := range e.leases {
				if want == 1 && !czxids[l.Token()] {
					out = append(out, fmt.Sprintf("held, not lost, but its node (czxid %d) is gone: deleted %v, left %v", l.Token(), e.get("deleted"), nodes))
				}
			}
			if e.competed && len(out) == 0 {
				e.note("another client deleted %v; the lease's node was not among them", e.get("deleted"))
			}
			return out
		},
		teardown: func(e *sweepEnv) { releaseAll(e.leases) },
	}
}

func releaseAll(ls []*zr.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := len(ls) - 1; i >= 0; i-- {
		_ = ls[i].Release(ctx)
	}
}

// lockReleaseOp: Release returns nil with every node gone, or
// ErrReleaseDeferred with every node gone soon after.
func lockReleaseOp(name string, acq func(context.Context, *sweepEnv) ([]*zr.Lease, error), release func(context.Context, *sweepEnv) error) sweepOp {
	return sweepOp{
		name: name,
		setup: func(ctx context.Context, e *sweepEnv) error {
			ls, err := acq(ctx, e)
			e.leases = ls
			return err
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			if release != nil {
				return release(ctx, e)
			}
			var errs []error
			for i := len(e.leases) - 1; i >= 0; i-- {
				errs = append(errs, e.leases[i].Release(ctx))
			}
			return errors.Join(errs...)
		},
		check: func(e *sweepEnv, err error) []string {
			switch {
			case err == nil:
				if n := e.owned(); len(n) > 0 {
					return []string{fmt.Sprintf("released (nil) but nodes still there: %v", n)}
				}
			case errors.Is(err, zr.ErrReleaseDeferred):
				if !eventually(sweepSettle, func() bool { return len(e.owned()) == 0 }) {
					return []string{fmt.Sprintf("ErrReleaseDeferred and the nodes never went: %v", e.owned())}
				}
			default:
				out := []string{fmt.Sprintf("release failed: %v", err)}
				if !eventually(sweepSettle, func() bool { return len(e.owned()) == 0 }) {
					out = append(out, fmt.Sprintf("nodes left: %v", e.owned()))
				}
				return out
			}
			return nil
		},
	}
}

func enc4(n int32) []byte { return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }
func enc8(n int64) []byte {
	b := make([]byte, 8)
	for i := 0; i < 8; i++ {
		b[i] = byte(n >> (56 - 8*i))
	}
	return b
}

// applied tells from the node's version whether e's one write happened:
// the setup's version, one write of the competing change, the operation's.
func (e *sweepEnv) applied(p string) (bool, []byte, string) {
	data, st, err := e.obs.Get(p)
	if err != nil {
		return false, nil, fmt.Sprintf("read %s: %v", p, err)
	}
	extra, _ := e.get("extra").(int32)
	d := st.Version - e.get("v0").(int32) - extra
	switch d {
	case 0:
		return false, data, ""
	case 1:
		return true, data, ""
	default:
		return d > 0, data, fmt.Sprintf("the node was written %d times by one call", d)
	}
}

// otherWrite is another client's write of p, counted for applied.
func otherWrite(e *sweepEnv, p string, data []byte) {
	if _, err := e.obs.Set(p, data, -1); err != nil {
		e.note("the other client's write failed: %v", err)
		return
	}
	extra, _ := e.get("extra").(int32)
	e.set("extra", extra+1)
}

func createVersioned(e *sweepEnv, p string, data []byte) error {
	if _, err := e.obs.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return err
	}
	e.set("v0", int32(0))
	return nil
}

// sharedOp: Set and TrySet are never reported not done when done, nor
// done when not.
func sharedOp(name string, value, try bool) sweepOp {
	node := func(e *sweepEnv) string { return e.path + "/v" }
	return sweepOp{
		name: name,
		setup: func(ctx context.Context, e *sweepEnv) error {
			if value {
				return createVersioned(e, node(e), []byte("old"))
			}
			return createVersioned(e, node(e), enc4(5))
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			var err error
			switch {
			case value && try:
				_, err = zr.NewSharedValue(e.s, node(e), []byte("seed")).TrySet(ctx, []byte("new"), 0)
			case value:
				_, err = zr.NewSharedValue(e.s, node(e), []byte("seed")).Set(ctx, []byte("new"))
			case try:
				_, err = zr.NewSharedCount(e.s, node(e), 0).TrySet(ctx, 7, 0)
			default:
				_, err = zr.NewSharedCount(e.s, node(e), 0).Set(ctx, 7)
			}
			return err
		},
		compete: func(e *sweepEnv) {
			data := enc4(9)
			if value {
				data = []byte("other")
			}
			otherWrite(e, node(e), data)
		},
		check: func(e *sweepEnv, err error) []string {
			done, _, bad := e.applied(node(e))
			var out []string
			if bad != "" {
				out = append(out, bad)
			}
			switch {
			case err == nil && !done:
				out = append(out, "reported done (nil), not written")
			case errors.Is(err, zr.ErrVersionChanged) && done:
				out = append(out, "reported not done (ErrVersionChanged), but written")
			case errors.Is(err, zr.ErrVersionChanged) && !try:
				out = append(out, "Set reported ErrVersionChanged")
			case err != nil && !errors.Is(err, zr.ErrVersionChanged) && !ctxOrConn(err):
				out = append(out, fmt.Sprintf("written=%v, error neither ctx's, a lost connection nor ErrVersionChanged: %v", done, err))
			}
			if err != nil && !errors.Is(err, zr.ErrVersionChanged) {
				e.note("outcome unknown to the caller (%v); written=%v", err, done)
			}
			return out
		},
	}
}

// counterOp: an Add never reports "not applied" when applied, nor
// "applied" when not.
func counterOp(name string, promoted bool) sweepOp {
	node := func(e *sweepEnv) string { return e.path + "/c" }
	var pre func(e *sweepEnv)
	if promoted {
		pre = func(e *sweepEnv) { // the optimistic try fails: the add goes on under the lock
			otherWrite(e, node(e), enc8(150))
			e.set("want", int64(151))
		}
	}
	return sweepOp{
		name:  name,
		pre:   pre,
		setup: func(ctx context.Context, e *sweepEnv) error { return createVersioned(e, node(e), enc8(100)) },
		run: func(ctx context.Context, e *sweepEnv) error {
			var opts []zr.CounterOption
			if promoted {
				opts = append(opts, zr.WithPromotedLock(e.path+"/lock"), zr.WithOptimisticRetry(zr.RetryNTimes(0, 10*time.Millisecond)))
			}
			r, err := zr.NewAtomicCounter(e.s, node(e), opts...).Add(ctx, 1)
			e.set("result", r)
			return err
		},
		compete: func(e *sweepEnv) {
			if promoted {
				deleteOwned(e) // the lock's node: the lock is lost
				return
			}
			otherWrite(e, node(e), enc8(200))
		},

		check: func(e *sweepEnv, err error) []string {
			done, data, bad := e.applied(node(e))
			r, _ := e.get("result").(zr.AtomicResult)
			var out []string
			if bad != "" {
				out = append(out, bad)
			}
			switch {
			case err == nil && r.Succeeded && !done:
				out = append(out, fmt.Sprintf("reported applied (%+v), not applied", r))
			case err == nil && !r.Succeeded:
				out = append(out, fmt.Sprintf("Succeeded=false with a nil error (%+v), applied=%v", r, done))
			case err != nil && done && !ctxOrConn(err):
				out = append(out, fmt.Sprintf("reported not applied (%v), but applied", err))
			case errors.Is(err, zr.ErrLockLost) && promoted:
				e.note("not applied, the promoted lock lost: an error Add's doc does not list")
			case err != nil && !ctxOrConn(err) && !errors.Is(err, zr.ErrRetriesExhausted):
				out = append(out, fmt.Sprintf("applied=%v, unexpected error: %v", done, err))
			}
			want, ok := e.get("want").(int64)
			if !ok {
				want = 101
			}
			if done && !e.competed && !bytes.Equal(data, enc8(want)) {
				out = append(out, fmt.Sprintf("applied, value %x, want %d", data, want))
			}
			if err != nil {
				e.note("applied=%v", done)
			}
			if n := e.owned(); !eventually(sweepSettle, func() bool { n = e.owned(); return len(n) == 0 }) {
				out = append(out, fmt.Sprintf("lock nodes left: %v", n))
			}
			return out
		},
	}
}

// queueItems returns the data of the items under q.
func sweepQueueItems(e *sweepEnv, q string) []string {
	kids, _, err := e.obs.Children(q)
	if err != nil {
		return nil
	}
	sort.Strings(kids)
	var out []string
	for _, k := range kids {
		if d, _, err := e.obs.Get(q + "/" + k); err == nil {
			out = append(out, string(d))
		}
	}
	return out
}

// queueOfferOp: an offered item is enqueued once (nil error) or at most
// once (an error); never twice.
func queueOfferOp(parent bool) sweepOp {
	q := func(e *sweepEnv) string { return e.path + "/q" }
	name := "Queue.Offer"
	if !parent {
		name = "Queue.Offer(no parent)" // Offer creates the queue's node
	}
	return sweepOp{
		name: name,
		setup: func(ctx context.Context, e *sweepEnv) error {
			if !parent {
				return nil
			}
			_, err := e.obs.Create(q(e), nil, 0, zk.WorldACL(zk.PermAll))
			return err
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			return zr.NewQueue(e.s, q(e)).Offer(ctx, []byte("item"))
		},
		compete: func(e *sweepEnv) { // another consumer takes what is there
			kids, _, _ := e.obs.Children(q(e))
			n := 0
			for _, k := range kids {
				if e.obs.Delete(q(e)+"/"+k, -1) == nil {
					n++
				}
			}
			e.set("taken", n)
		},
		check: func(e *sweepEnv, err error) []string {
			taken, _ := e.get("taken").(int)
			count := func() int { return len(sweepQueueItems(e, q(e))) + taken }
			n := count()
			switch {
			case n > 1:
				return []string{fmt.Sprintf("the item was enqueued %d times", n)}
			case err == nil && n == 0:
				return []string{"reported enqueued, no item"}
			case err != nil && errors.Is(err, context.DeadlineExceeded):
				// ctx ended: the item is deleted in the background.
				if !eventually(sweepSettle, func() bool { return count() == taken }) {
					return []string{"ctx ended and the item stayed"}
				}
			}
			return nil
		},
	}
}

// queueTakeOp: with items a, b queued and another consumer taking the head
// as the competing change, no item is lost or taken twice, and an item
// taken with a nil error is the head.
func queueTakeOp() sweepOp {
	q := func(e *sweepEnv) string { return e.path + "/q" }
	return sweepOp{
		name: "Queue.Take",
		setup: func(ctx context.Context, e *sweepEnv) error {
			if _, err := e.obs.Create(q(e), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				return err
			}
			for _, it := range []string{"a", "b"} {
				if _, err := e.obs.Create(q(e)+"/qn-", []byte(it), zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
					return err
				}
			}
			return nil
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			item, err := zr.NewQueue(e.s, q(e)).Take(ctx)
			e.set("item", item)
			return err
		},
		compete: func(e *sweepEnv) {
			kids, _, _ := e.obs.Children(q(e))
			sort.Strings(kids)
			for _, k := range kids {
				d, _, err := e.obs.Get(q(e) + "/" + k)
				if err != nil {
					continue
				}
				if e.obs.Delete(q(e)+"/"+k, -1) == nil {
					e.set("other", string(d))
					return
				}
			}
		},
		check: func(e *sweepEnv, err error) []string {
			item, _ := e.get("item").([]byte)
			other, _ := e.get("other").(string)
			rest := sweepQueueItems(e, q(e))
			var out []string
			all := append([]string(nil), rest...)
			if other != "" {
				all = append(all, other)
			}
			switch {
			case err == nil || errors.Is(err, zr.ErrTakeUncertain):
				if item == nil {
					return []string{fmt.Sprintf("no item with %v", err)}
				}
				if string(item) == other {
					if err == nil {
						out = append(out, fmt.Sprintf("took %q with a nil error, which another consumer took", item))
					}
				} else {
					all = append(all, string(item))
				}
				if err == nil && !e.competed && string(item) != "a" {
					out = append(out, fmt.Sprintf("took %q, not the head", item))
				}
			default:
				if item != nil {
					out = append(out, fmt.Sprintf("an item (%q) with an error: %v", item, err))
				}
			}
			sort.Strings(all)
			if strings.Join(all, ",") != "a,b" {
				out = append(out, fmt.Sprintf("items lost or duplicated: queue %v, taken %q, other consumer %q", rest, item, other))
			}
			return out
		},
	}
}

// barrierOp: Set leaves the node there, Remove leaves it gone, unless the
// competing change (deleting it / creating it again) came after.
func barrierOp(name string, set bool) sweepOp {
	node := func(e *sweepEnv) string { return e.path + "/b" }
	if strings.HasSuffix(name, "(no parent)") {
		node = func(e *sweepEnv) string { return e.path + "/x/b" }
	}
	return sweepOp{
		name: name,
		setup: func(ctx context.Context, e *sweepEnv) error {
			if set {
				return nil
			}
			return zr.NewBarrier(e.s, node(e)).Set(ctx)
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			if set {
				return zr.NewBarrier(e.s, node(e)).Set(ctx)
			}
			return zr.NewBarrier(e.s, node(e)).Remove(ctx)
		},
		compete: func(e *sweepEnv) {
			if set {
				_ = e.obs.Delete(node(e), -1)
			} else {
				_, _ = e.obs.Create(node(e), nil, 0, zk.WorldACL(zk.PermAll))
			}
		},
		check: func(e *sweepEnv, err error) []string {
			if err != nil {
				return []string{fmt.Sprintf("failed: %v", err)}
			}
			if !e.competed && exists(e.obs, node(e)) != set {
				return []string{fmt.Sprintf("returned nil, node exists=%v", !set)}
			}
			return nil
		},
	}
}

// doubleBarrierOp: two members (e's Session and the peer); Enter returns
// nil for both with one node each, Leave returns nil for both and leaves
// no member node.
func doubleBarrierOp(name string, enter, lowest bool) sweepOp {
	node := func(e *sweepEnv) string { return e.path + "/db" }
	type both struct {
		mine, other *zr.DoubleBarrier
		otherErr    chan error
	}
	return sweepOp{
		name: name,
		setup: func(ctx context.Context, e *sweepEnv) error {
			b := &both{mine: zr.NewDoubleBarrier(e.s, node(e), 2), other: zr.NewDoubleBarrier(e.peer, node(e), 2), otherErr: make(chan error, 1)}
			e.set("b", b)
			if enter {
				return nil
			}
			// Enter until this member has the role wanted (the nodes' names
			// are random): the lowest leaves last, the others first.
			for try := 0; try < 16; try++ {
				ch := make(chan error, 1)
				go func() { ch <- b.other.Enter(ctx) }()
				if err := errors.Join(b.mine.Enter(ctx), <-ch); err != nil {
					return err
				}
				kids, _, err := e.obs.Children(node(e))
				if err != nil {
					return err
				}
				var members []string
				for _, k := range kids {
					if k != "ready" {
						members = append(members, k)
					}
				}
				sort.Strings(members)
				mine := e.owned()
				if len(mine) != 1 || len(members) != 2 {
					return fmt.Errorf("entered with nodes %v, members %v", mine, members)
				}
				if (node(e)+"/"+members[0] == mine[0]) == lowest {
					return nil
				}
				go func() { ch <- b.other.Leave(ctx) }()
				if err := errors.Join(b.mine.Leave(ctx), <-ch); err != nil {
					return err
				}
			}
			return errors.New("16 entries without the role wanted")
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			b := e.get("b").(*both)
			octx, cancel := context.WithTimeout(context.Background(), sweepOpBound+sweepSlack)
			go func() {
				defer cancel()
				if enter {
					b.otherErr <- b.other.Enter(octx)
				} else {
					b.otherErr <- b.other.Leave(octx)
				}
			}()
			if enter {
				return b.mine.Enter(ctx)
			}
			return b.mine.Leave(ctx)
		},
		check: func(e *sweepEnv, err error) []string {
			b := e.get("b").(*both)
			var out []string
			var otherErr error
			select {
			case otherErr = <-b.otherErr:
			case <-time.After(sweepOpBound + 2*sweepSlack):
				otherErr = errors.New("no return")
			}
			if err != nil {
				out = append(out, fmt.Sprintf("this member: %v", err))
			}
			if otherErr != nil {
				out = append(out, fmt.Sprintf("the other member: %v", otherErr))
			}
			mine := e.owned()
			if enter && err == nil && len(mine) != 1 {
				out = append(out, fmt.Sprintf("entered with %d nodes: %v", len(mine), mine))
			}
			if !enter && !eventually(sweepSettle, func() bool { return len(e.owned()) == 0 }) {
				out = append(out, fmt.Sprintf("left, nodes still there: %v", e.owned()))
			}
			return out
		},
		teardown: func(e *sweepEnv) {
			if !enter {
				return
			}
			b := e.get("b").(*both)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ch := make(chan error, 1)
			go func() { ch <- b.other.Leave(ctx) }()
			_ = b.mine.Leave(ctx)
			<-ch
		},
	}
}

// keeperOps: the keepers (PersistentNode, GroupMember, discovery) start
// with their node in place once, and close with it gone (nil) or going
// (ErrReleaseDeferred).
func keeperOps() []sweepOp {
	type keeper struct {
		start   func(ctx context.Context, e *sweepEnv) error
		inPlace func(ctx context.Context, e *sweepEnv) error // nil: start waits for the node
		write   func(ctx context.Context, e *sweepEnv) error
		stop    func(ctx context.Context, e *sweepEnv) error
		// data reports whether the node holds the written data.
		written func(e *sweepEnv) bool
		// nodes lists the keeper's nodes (nil: the Session's ephemeral
		// nodes under e.path).
		nodes func(e *sweepEnv) []string
	}
	pnode := func(mode zr.CreateMode) keeper {
		nodes := func(e *sweepEnv) []string {
			kids, _, err := e.obs.Children(e.path)
			if err != nil {
				return nil
			}
			var out []string
			for _, k := range kids {
				out = append(out, e.path+"/"+k)
			}
			sort.Strings(out)
			return out
		}
		return keeper{
			start: func(ctx context.Context, e *sweepEnv) error {
				n := zr.NewPersistentNode(e.s, e.path+"/n", []byte("v1"), zr.WithCreateMode(mode))
				e.set("k", n)
				if err := n.Start(ctx); err != nil {
					return err
				}
				return n.WaitInPlace(ctx)
			},
			write: func(ctx context.Context, e *sweepEnv) error {
				return e.get("k").(*zr.PersistentNode).SetData(ctx, []byte("v2"))
			},
			stop: func(ctx context.Context, e *sweepEnv) error { return e.get("k").(*zr.PersistentNode).Close(ctx) },
			written: func(e *sweepEnv) bool {
				n := nodes(e)
				if len(n) != 1 {
					return false
				}
				d, _, err := e.obs.Get(n[0])
				return err == nil && string(d) == "v2"
			},
			nodes: nodes,
		}
	}
	gm := keeper{
		start: func(ctx context.Context, e *sweepEnv) error {
			g := zr.NewGroupMember(e.s, e.path, "m1", []byte("v1"))
			e.set("k", g)
			return g.Start(ctx)
		},
		inPlace: func(ctx context.Context, e *sweepEnv) error {
			return e.get("k").(*zr.GroupMember).WaitInPlace(ctx)
		},
		write: func(ctx context.Context, e *sweepEnv) error {
			return e.get("k").(*zr.GroupMember).SetData(ctx, []byte("v2"))
		},
		stop: func(ctx context.Context, e *sweepEnv) error { return e.get("k").(*zr.GroupMember).Close(ctx) },
		written: func(e *sweepEnv) bool {
			o := e.owned()
			if len(o) != 1 {
				return false
			}
			d, _, err := e.obs.Get(o[0])
			return err == nil && string(d) == "v2"
		},
	}
	inst := discovery.Instance{Name: "svc", ID: "i1", Address: "127.0.0.1", Port: 8080}
	ds := keeper{
		start: func(ctx context.Context, e *sweepEnv) error {
			d := discovery.New(e.s, e.path)
			e.set("k", d)
			return d.Register(ctx, inst)
		},
		write: func(ctx context.Context, e *sweepEnv) error {
			i := inst
			i.Port = 9090
			return e.get("k").(*discovery.ServiceDiscovery).Update(ctx, i)
		},
		stop: func(ctx context.Context, e *sweepEnv) error {
			return e.get("k").(*discovery.ServiceDiscovery).Unregister(ctx, inst.Name, inst.ID)
		},
		written: func(e *sweepEnv) bool {
			d, _, err := e.obs.Get(e.path + "/svc/i1")
			return err == nil && bytes.Contains(d, []byte("9090"))
		},
	}
	closeAll := func(e *sweepEnv) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		switch k := e.get("k").(type) {
		case *zr.PersistentNode:
			_ = k.Close(ctx)
		case *zr.GroupMember:
			_ = k.Close(ctx)
		case *discovery.ServiceDiscovery:
			_ = k.Close(ctx)
		}
	}
	var ops []sweepOp
	for _, kp := range []struct {
		name string
		k    keeper
	}{
		{"PersistentNode", pnode(zr.ModeEphemeral)},
		{"PersistentNode(EPHEMERAL_SEQUENTIAL)", pnode(zr.ModeEphemeralSequential)},
		{"PersistentNode(PERSISTENT)", pnode(zr.ModePersistent)},
		{"PersistentNode(PERSISTENT_SEQUENTIAL)", pnode(zr.ModePersistentSequential)},
		{"GroupMember", gm},
		{"discovery.Register", ds},
	} {
		startName, writeName, stopName := kp.name+".Start", kp.name+".SetData", kp.name+".Close"
		if kp.name == "discovery.Register" {
			startName, writeName, stopName = "discovery.Register", "discovery.Update", "discovery.Unregister"
		}
		k := kp.k
		nodes := k.nodes
		if nodes == nil {
			nodes = (*sweepEnv).owned
		}
		deleteNodes := func(e *sweepEnv) {
			var deleted []string
			for _, p := range nodes(e) {
				if e.obs.Delete(p, -1) == nil {
					deleted = append(deleted, p)
				}
			}
			e.set("deleted", deleted)
		}
		ready := func(ctx context.Context, e *sweepEnv) error {
			if err := k.start(ctx, e); err != nil || k.inPlace == nil {
				return err
			}
			return k.inPlace(ctx, e)
		}
		ops = append(ops,
			sweepOp{
				name:    startName,
				run:     k.start,
				compete: deleteNodes, // the keeper must put its node back
				check: func(e *sweepEnv, err error) []string {
					if err != nil {
						return []string{fmt.Sprintf("start failed: %v", err)}
					}
					var n []string
					if !eventually(sweepSettle, func() bool { n = nodes(e); return len(n) == 1 }) {
						return []string{fmt.Sprintf("started, %d nodes of its own: %v", len(n), n)}
					}
					return nil
				},
				teardown: closeAll,
			},
			sweepOp{
				name:  writeName,
				setup: ready,
				run:   k.write,
				check: func(e *sweepEnv, err error) []string {
					if err == nil && !k.written(e) {
						return []string{"returned nil, data not written"}
					}
					if !eventually(sweepSettle, func() bool { return k.written(e) }) {
						return []string{fmt.Sprintf("returned %v, data never written", err)}
					}
					if n := nodes(e); len(n) != 1 {
						return []string{fmt.Sprintf("%d nodes of its own: %v", len(n), n)}
					}
					return nil
				},
				teardown: closeAll,
			},
			sweepOp{
				name:  stopName,
				setup: ready,
				run:   k.stop,
				check: func(e *sweepEnv, err error) []string {
					switch {
					case err == nil:
						if n := nodes(e); len(n) > 0 {
							return []string{fmt.Sprintf("closed (nil), node still there: %v", n)}
						}
					case errors.Is(err, zr.ErrReleaseDeferred):
						if !eventually(sweepSettle, func() bool { return len(nodes(e)) == 0 }) {
							return []string{fmt.Sprintf("ErrReleaseDeferred and the node never went: %v", nodes(e))}
						}
					default:
						return []string{fmt.Sprintf("close failed: %v (nodes: %v)", err, nodes(e))}
					}
					return nil
				},
				teardown: closeAll,
			},
		)
	}
	return ops
}

// proclaimOp: Proclaim returns nil with the leader's node holding the data;
// on an error the data may or may not be set, and the leadership is not
// disturbed either way.
func proclaimOp() sweepOp {
	return sweepOp{
		name: "Election.Proclaim",
		setup: func(ctx context.Context, e *sweepEnv) error {
			el := zr.NewElection(e.s, e.path, zr.WithParticipantID("sweep"), zr.WithProclaim(true))
			l, err := el.Campaign(ctx)
			e.set("election", el)
			e.leases = leases(l)
			if err != nil {
				return err
			}
			// Another client watches the leader's node: a data change says
			// the write landed.
			n := e.owned()
			if len(n) != 1 {
				return fmt.Errorf("the leader has nodes %v", n)
			}
			_, _, w, err := e.obs.GetW(n[0])
			e.set("watch", w)
			return err
		},
		run: func(ctx context.Context, e *sweepEnv) error {
			return e.get("election").(*zr.Election).Proclaim(ctx, e.leases[0], []byte("proclaimed"))
		},
		check: func(e *sweepEnv, err error) []string {
			var out []string
			n := e.owned()
			select {
			case <-e.leases[0].Done():
				if e.fault == "lose-suspended" { // LoseOnSuspended: the term ended with the suspension
					if err == nil || !errors.Is(err, zr.ErrNotLeader) {
						out = append(out, fmt.Sprintf("the term ended, Proclaim returned %v, want ErrNotLeader", err))
					}
					var ev zk.Event
					select {
					case ev = <-e.get("watch").(<-chan zk.Event):
					case <-time.After(sweepSettle):
					}
					if ev.Type == zk.EventNodeDataChanged && !errors.Is(err, zk.ErrConnectionClosed) {
						out = append(out, fmt.Sprintf("the data was written, the error (%v) does not say the outcome is unknown", err))
					}
					e.note("term ended with the suspension; nodes left: %v", n)
					return out
				}
			default:
			}
			if len(n) != 1 {
				return []string{fmt.Sprintf("the leader has %d nodes: %v", len(n), n)}
			}
			d, _, gerr := e.obs.Get(n[0])
			if err == nil && (gerr != nil || string(d) != "proclaimed") {
				out = append(out, fmt.Sprintf("returned nil, data %q", d))
			}
			select {
			case <-e.leases[0].Done():
				if e.fault != "lose-suspended" {
					out = append(out, fmt.Sprintf("the leadership ended: %v", e.leases[0].Err()))
				}
			default:
			}
			return out
		},
		teardown: func(e *sweepEnv) { releaseAll(e.leases) },
	}
}
