// Command client is one process of the robustness suite. It runs each
// workload it is given on a zkrecipes Session of its own, and appends every
// operation to the shared log (chaos.Log, CLOCK_MONOTONIC stamps) as a CALL
// line at invocation and its response line at return:
//
//   - mutex, semmutex, rwwrite: a Mutex, a SemaphoreMutex, the write side of
//     an RWMutex; acquire (sometimes with a deadline, so waiters give up),
//     writes under the lease's token to the workload's fenced store, release;
//     the chaos kinds ACQUIRED, ERROR, WRITE, DONE, STOP, RELEASED;
//   - election: an Election (Campaign, then the leadership released), as
//     the lock workloads, writes fenced by the leadership's token;
//   - semaphore: one lease at a time of a Semaphore of -semaphore-max, held
//     for a while without writes;
//   - queue: a Queue: offers of unique items, takes (RET lines);
//   - workqueue: a WorkQueue: puts of unique items, takes under the item's
//     lock (ACQUIRED, DONE, STOP lines), each ended by an ack or a release
//     (RET lines), or left to the Session's Close at shutdown;
//   - watch: WatchData, a NodeCache and a TreeCache on the sharedcount
//     workload's node (SEEN lines), WatchChildren on the queue workload's
//     node (LISTED lines);
//   - counter: an AtomicCounter: add, get, compare-and-set (RET lines);
//   - sharedcount: a SharedCount: get, then a versioned set (RET lines).
//
// Each Session's id and password are kept in <session-dir>/<id>.<workload>
// so that the test can expire it; with -lib-log, the library's messages go
// to that file, stamped with the shared log's clock. On SIGTERM the client stops, closes its
// Sessions, prints a JSON summary line and exits 0. It dials 127.0.0.0/8
// only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/internal/fleet"
	"github.com/zkrecipes/zkrecipes/integration/robustness"
)

func main() {
	common := fleet.RegisterFlags(flag.CommandLine)
	var (
		root      = flag.String("root", "/robustness", "root path of the workloads")
		workloads = flag.String("workloads", "mutex,counter", "comma-separated workloads")
		stores    = flag.String("stores", "", "fenced stores of the lock workloads: workload=host:port,...")
		sessDir   = flag.String("session-dir", "", "where to keep each session's id and password")
		semMax    = flag.Int("semaphore-max", 2, "leases of the semaphore workload")
		libLog    = flag.String("lib-log", "", "append the library's messages (Info and above) to this file")
	)
	flag.Parse()
	fleet.Require(flag.CommandLine, "servers", "id", "log", "session-dir")
	ctx, proc := fleet.Start(common)
	storeOf := map[string]string{}
	fleet.RequireLoopback("the server", common.ServerList()...)
	for _, kv := range strings.Split(*stores, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			fleet.RequireLoopback("the store", v)
			storeOf[k] = v
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sum  = robustness.Summary{ID: common.ID, Ops: map[string]int{}}
		errs []error
	)
	lib := fleet.LibraryLog(*libLog)
	for _, w := range strings.Split(*workloads, ",") {
		actor := common.ID + "/" + w
		wk := &worker{lib: lib, actor: actor, workload: w, log: proc.Log, fence: fleet.Fence{Log: proc.Log, HTTP: proc.HTTP, Addr: storeOf[w], Actor: actor},
			path: *root + "/" + w, sessFile: filepath.Join(*sessDir, common.ID+"."+w), semMax: *semMax}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := wk.run(ctx, common.ServerList(), common.SessionTimeout)
			mu.Lock()
			defer mu.Unlock()
			sum.Ops[w] = n
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", w, err))
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		fleet.Fail(errors.Join(errs...))
	}
	sum.Leaked = proc.Leftover()
	proc.Finish(sum)
}

// worker runs one workload on a Session of its own.
type worker struct {
	actor, workload, path string
	log                   *chaos.Log
	fence                 fleet.Fence // no Addr: a workload without fenced writes
	sessFile              string
	lib                   *slog.Logger // the library's messages; nil: none
	semMax                int
	ops                   int
}

func (w *worker) run(ctx context.Context, servers []string, timeout time.Duration) (int, error) {
	var opts []zr.SessionOption
	if w.lib != nil {
		opts = append(opts, zr.WithLogger(w.lib.With("actor", w.actor)))
	}
	s, closeSession, err := fleet.Connect(ctx, servers, timeout, w.log, w.actor, w.sessFile, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		return 0, err
	}
	defer closeSession()
	switch w.workload {
	case "mutex":
		m := zr.NewMutex(s, w.path, zr.WithNodeData([]byte(w.actor)))
		w.lock(ctx, m.Acquire)
	case "semmutex":
		m := zr.NewSemaphoreMutex(s, w.path)
		w.lock(ctx, m.Acquire)
	case "rwwrite":
		rw := zr.NewRWMutex(s, w.path)
		w.lock(ctx, rw.WriteLock().Acquire)
	case "election":
		e := zr.NewElection(s, w.path, zr.WithParticipantID(w.actor))
		w.lock(ctx, e.Campaign)
	case "semaphore":
		sem := zr.NewSemaphore(s, w.path, w.semMax)
		w.lock(ctx, func(ctx context.Context) (*zr.Lease, error) {
			ls, err := sem.Acquire(ctx, 1)
			if err != nil {
				return nil, err
			}
			return ls[0], nil
		})
	case "queue":
		w.queue(ctx, zr.NewQueue(s, w.path))
	case "workqueue":
		w.workQueue(ctx, zr.NewWorkQueue(s, w.path))
	case "watch":
		// The caches run on their persistent watch on s, and on one-shot
		// watches on a second Session without the wire layer.
		one, err := zr.Connect(ctx, servers, zr.WithSessionTimeout(timeout), zr.WithWireLayer(false))
		if err != nil {
			if ctx.Err() != nil {
				return 0, nil
			}
			return 0, err
		}
		defer one.Close()
		w.watch(ctx, s, one)
	case "counter":
		w.counter(ctx, zr.NewAtomicCounter(s, w.path))
	case "sharedcount":
		w.sharedCount(ctx, zr.NewSharedCount(s, w.path, 0))
	default:
		return 0, fmt.Errorf("unknown workload %q", w.workload)
	}
	return w.ops, nil
}

// lock takes the lock again and again; a third of the attempts give up
// after a random deadline.
func (w *worker) lock(ctx context.Context, acquire func(context.Context) (*zr.Lease, error)) {
	for ctx.Err() == nil {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if rand.IntN(3) == 0 {
			actx, cancel = context.WithTimeout(ctx, time.Duration(100+rand.IntN(1500))*time.Millisecond)
		}
		w.log.Add(robustness.Call, w.actor, "acquire")
		l, err := acquire(actx)
		cancel()
		w.ops++
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.log.Add(chaos.Failed, w.actor, err)
			_ = fleet.Sleep(ctx, 50*time.Millisecond)
			continue
		}
		w.hold(ctx, l)
	}
}

// hold writes to the fenced store under l's token until its writes are
// done, the lease is lost, the store refuses the token or ctx ends, then
// releases l.
func (w *worker) hold(ctx context.Context, l *zr.Lease) {
	h := fleet.Hold(w.log, w.actor, l)
	tok := h.Token()
	// A quarter of the leases are held long, so that faults find holders.
	writes, pause := 3, time.Duration(10+rand.IntN(30))*time.Millisecond
	if rand.IntN(4) == 0 {
		writes, pause = 15, 100*time.Millisecond
	}
	reason := "release"
	for i := 0; i < writes && reason == "release"; i++ {
		if l.Err() != nil {
			reason = "lost"
			break
		}
		if ctx.Err() != nil {
			reason = "shutdown"
			break
		}
		if w.fence.Addr != "" { // a semaphore's holders share the resource: no fenced writes
			w.log.Add(robustness.Call, w.actor, "write", tok)
			if w.fence.Write(tok) == "refused" {
				reason = "fenced"
			}
			w.ops++
		}
		select {
		case <-l.Done():
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	if reason == "release" && l.Err() != nil {
		reason = "lost"
	}
	_ = h.Release(ctx, reason)
}

// outcome is a RET line's outcome for a change that failed with err, as
// AtomicCounter's doc promises: only an error matching ErrOutcomeUnknown
// may have changed the counter; any other says it did not ("fail"), and
// the model holds the counter to it.
func outcome(err error) string {
	if errors.Is(err, zr.ErrOutcomeUnknown) {
		return "unknown"
	}
	return "fail"
}

// counter adds, reads and compares-and-sets an AtomicCounter.
func (w *worker) counter(ctx context.Context, c *zr.AtomicCounter) {
	var last int64
	for ctx.Err() == nil {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		switch r := rand.IntN(10); {
		case r < 5:
			d := int64(1 + rand.IntN(5))
			w.log.Add(robustness.Call, w.actor, "add", d)
			res, err := c.Add(octx, d)
			switch {
			case err != nil:
				w.log.Add(robustness.Return, w.actor, "add", outcome(err), err)
			case res.Succeeded:
				w.log.Add(robustness.Return, w.actor, "add", "ok", res.PreValue)
				last = res.PostValue
			default:
				w.log.Add(robustness.Return, w.actor, "add", "fail", "not_succeeded")
			}
		case r < 8:
			w.log.Add(robustness.Call, w.actor, "get")
			v, err := c.Get(octx)
			if err != nil {
				w.log.Add(robustness.Return, w.actor, "get", "fail", err)
			} else {
				w.log.Add(robustness.Return, w.actor, "get", "ok", v)
				last = v
			}
		default:
			n := last + int64(1+rand.IntN(5))
			w.log.Add(robustness.Call, w.actor, "cas", last, n)
			res, err := c.CompareAndSet(octx, last, n)
			if err != nil {
				w.log.Add(robustness.Return, w.actor, "cas", outcome(err), err)
			} else {
				w.log.Add(robustness.Return, w.actor, "cas", "ok", res.Succeeded, res.PreValue)
				last = res.PostValue
			}
		}
		cancel()
		w.ops++
		_ = fleet.Sleep(ctx, time.Duration(5+rand.IntN(20))*time.Millisecond)
	}
}

// watch follows the sharedcount workload's node with WatchData, a
// NodeCache and a TreeCache (SEEN lines), and the queue workload's node
// with WatchChildren (LISTED lines), all on the workload's Session; and
// with a NodeCache and a TreeCache on one-shot watches, on one (a Session
// without the wire layer).
func (w *worker) watch(ctx context.Context, s, one *zr.Session) {
	base := strings.TrimSuffix(w.path, "/watch")
	proc := strings.SplitN(w.actor, "/", 2)[0]
	var wg sync.WaitGroup
	var mu sync.Mutex // guards w.ops
	observe := func(recipe string, run func(actor string) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each run is an observer of its own: a new one starts from the
			// node's current state, which the last one may have seen.
			for i := 1; ctx.Err() == nil; i++ {
				_ = run(robustness.ObserverActor(proc, recipe, i))
				_ = fleet.Sleep(ctx, 100*time.Millisecond) // the recipe ended on an error: start again
			}
		}()
	}
	count := func() {
		mu.Lock()
		w.ops++
		mu.Unlock()
	}
	for _, recipe := range robustness.DataRecipes {
		on := s
		if robustness.OneShot(recipe) {
			on = one
		}
		observe(recipe, func(actor string) error {
			return robustness.ObserveData(ctx, on, recipe, base+"/sharedcount", func(data []byte, st *zr.NodeStat) {
				count()
				robustness.LogSeen(w.log, actor, data, st)
			})
		})
	}
	observe(robustness.Children, func(actor string) error {
		return robustness.ObserveChildren(ctx, s, base+"/queue", func(kids []string, st *zr.NodeStat) {
			count()
			robustness.LogListed(w.log, actor, kids, st)
		})
	})
	wg.Wait()
}

// queue offers unique items and takes them.
func (w *worker) queue(ctx context.Context, q *zr.Queue) {
	prefix := strings.ReplaceAll(w.actor, "/", "-")
	for n := 0; ctx.Err() == nil; n++ {
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if rand.IntN(2) == 0 {
			item := fmt.Sprintf("%s-%d", prefix, n)
			w.log.Add(robustness.Call, w.actor, "offer", item)
			if err := q.Offer(octx, []byte(item)); err != nil {
				w.log.Add(robustness.Return, w.actor, "offer", "unknown", err)
			} else {
				w.log.Add(robustness.Return, w.actor, "offer", "ok")
			}
		} else {
			w.log.Add(robustness.Call, w.actor, "take")
			item, err := q.Take(octx)
			switch {
			case err == nil:
				w.log.Add(robustness.Return, w.actor, "take", "ok", string(item))
			case errors.Is(err, zr.ErrTakeUncertain):
				w.log.Add(robustness.Return, w.actor, "take", "uncertain", string(item))
			default:
				w.log.Add(robustness.Return, w.actor, "take", "fail", err)
			}
		}
		cancel()
		w.ops++
		_ = fleet.Sleep(ctx, time.Duration(5+rand.IntN(20))*time.Millisecond)
	}
}

// workQueue puts unique items and takes them: a take holds the item a
// while (a quarter of them long, so that faults find holders), then acks
// it (four times in five) or releases it, also after its lock was lost
// (the ack then succeeds only if nobody took the item since). At shutdown
// a held item is released half the time, else left to the Session's
// Close.
func (w *worker) workQueue(ctx context.Context, q *zr.WorkQueue) {
	prefix := strings.ReplaceAll(w.actor, "/", "-")
	for n := 0; ctx.Err() == nil; n++ {
		if rand.IntN(2) == 0 {
			octx, cancel := context.WithTimeout(ctx, 2*time.Second)
			item := fmt.Sprintf("%s-%d", prefix, n)
			w.log.Add(robustness.Call, w.actor, "put", item)
			if err := q.Put(octx, []byte(item)); err != nil {
				w.log.Add(robustness.Return, w.actor, "put", "unknown", err)
			} else {
				w.log.Add(robustness.Return, w.actor, "put", "ok")
			}
			cancel()
			w.ops++
		} else {
			w.takeWork(ctx, q)
		}
		_ = fleet.Sleep(ctx, time.Duration(5+rand.IntN(20))*time.Millisecond)
	}
}

// takeWork takes one item, holds it and ends it.
func (w *worker) takeWork(ctx context.Context, q *zr.WorkQueue) {
	octx, cancel := context.WithTimeout(ctx, 2*time.Second)
	w.log.Add(robustness.Call, w.actor, "take")
	wi, err := q.Take(octx)
	cancel()
	w.ops++
	if wi == nil {
		if ctx.Err() == nil {
			w.log.Add(chaos.Failed, w.actor, err)
		}
		return
	}
	tok := wi.Token()
	w.log.Add(chaos.Acquired, w.actor, tok, string(wi.Data()), wi.Name())
	watched, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-wi.Done():
		case <-quit: // left to the Session's Close: STOP ends the take
			return
		}
		t := chaos.Now()
		what := "lost"
		if errors.Is(wi.Err(), zr.ErrReleased) {
			what = "released"
		}
		w.log.AddAt(t, chaos.Done, w.actor, tok, what, wi.Err())
	}()
	pause := time.Duration(10+rand.IntN(40)) * time.Millisecond
	if rand.IntN(4) == 0 {
		pause = time.Duration(1000+rand.IntN(2000)) * time.Millisecond
	}
	select {
	case <-wi.Done():
	case <-ctx.Done():
	case <-time.After(pause):
	}
	op := "ack"
	if rand.IntN(5) == 0 {
		op = "release"
	}
	switch {
	case wi.Err() != nil:
		<-watched // the loss logged before anything else of this take
		w.log.Add(chaos.Stop, w.actor, tok, "lost")
	case ctx.Err() != nil:
		w.log.Add(chaos.Stop, w.actor, tok, "shutdown")
		if rand.IntN(2) == 0 {
			close(quit)
			<-watched
			return // left to the Session's Close
		}
		op = "release"
	default:
		w.log.Add(chaos.Stop, w.actor, tok, op)
	}
	end := wi.Ack
	if op == "release" {
		end = wi.Release
	}
	ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	w.log.Add(robustness.Call, w.actor, op, tok)
	err = end(ectx)
	ecancel()
	w.ops++
	switch {
	case err == nil:
		w.log.Add(robustness.Return, w.actor, op, "ok", tok)
	case errors.Is(err, zr.ErrItemLost):
		w.log.Add(robustness.Return, w.actor, op, "lost", tok, err)
	case errors.Is(err, zr.ErrOutcomeUnknown):
		w.log.Add(robustness.Return, w.actor, op, "unknown", tok, err)
	default:
		w.log.Add(robustness.Return, w.actor, op, "fail", tok, err)
	}
	<-watched
}

// sharedCount reads a SharedCount and sets it over the version read.
func (w *worker) sharedCount(ctx context.Context, c *zr.SharedCount) {
	for ctx.Err() == nil {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		w.log.Add(robustness.Call, w.actor, "cget")
		v, err := c.Get(octx)
		w.ops++
		if err != nil {
			w.log.Add(robustness.Return, w.actor, "cget", "fail", err)
		} else {
			w.log.Add(robustness.Return, w.actor, "cget", "ok", v.Count, v.Version)
			n := v.Count + int32(1+rand.IntN(5))
			w.log.Add(robustness.Call, w.actor, "tryset", n, v.Version)
			r, err := c.TrySet(octx, n, v.Version)
			w.ops++
			switch {
			case err == nil:
				w.log.Add(robustness.Return, w.actor, "tryset", "ok", true, r.Version)
			case errors.Is(err, zr.ErrVersionChanged):
				w.log.Add(robustness.Return, w.actor, "tryset", "ok", false, 0)
			default:
				w.log.Add(robustness.Return, w.actor, "tryset", "unknown", err)
			}
		}
		cancel()
		_ = fleet.Sleep(ctx, time.Duration(5+rand.IntN(20))*time.Millisecond)
	}
}
