package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
)

// The burst: a flat node with burstSize children, then burstSize creates
// of new children and burstSize deletes of the old ones, shuffled, sent
// by burstWriters goroutines on one connection (pipelined). An observer
// converges once it holds exactly the final children; what is measured is
// how long after the writer's last reply that happens.
const (
	burstSize    = 1000
	burstWriters = 32
	burstRounds  = 5
)

// burstObserver starts following root's children and returns once it
// holds them (its load done); until(want) then returns a channel that
// receives the time it holds exactly want (names), once.
type burstObserver func(ctx context.Context, root string) (until func(want map[string]bool) <-chan time.Time, err error)

// burstConvergence runs the burst burstRounds times for each observer
// (one observer per burst) and returns the median time, per observer,
// from the writer's last reply to the observer's convergence.
func burstConvergence(b *testing.B, e Env, observers map[string]burstObserver) map[string]time.Duration {
	out := map[string]time.Duration{}
	names := make([]string, 0, len(observers))
	for name := range observers {
		names = append(names, name)
	}
	slices.Sort(names)
	for round := range burstRounds {
		for _, name := range names {
			d, err := burstOnce(b, e, observers[name], uint64(round))
			if err != nil {
				b.Fatalf("burst, %s: %v", name, err)
			}
			out[name+"/"+fmt.Sprint(round)] = d
		}
	}
	for _, name := range names {
		var took []time.Duration
		for round := range burstRounds {
			took = append(took, out[name+"/"+fmt.Sprint(round)])
			delete(out, name+"/"+fmt.Sprint(round))
		}
		b.Logf("burst of %d creates and %d deletes, convergence after the writer's last reply, %s: %v", burstSize, burstSize, name, took)
		slices.Sort(took)
		out[name] = took[len(took)/2]
	}
	return out
}

func burstOnce(b *testing.B, e Env, observe burstObserver, seed uint64) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := e.Observer
	root := benchPath(b)
	if err := ensurePath(conn, root); err != nil {
		return 0, err
	}
	acl := zk.WorldACL(zk.PermAll)
	data := make([]byte, 32)
	var ops []any
	for i := range burstSize {
		ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/old-%04d", root, i), Data: data, Acl: acl})
		if len(ops) == 100 {
			if _, err := conn.Multi(ops...); err != nil {
				return 0, err
			}
			ops = ops[:0]
		}
	}
	want := map[string]bool{}
	type op struct {
		path   string
		create bool
	}
	var burst []op
	for i := range burstSize {
		name := fmt.Sprintf("new-%04d", i)
		want[name] = true
		burst = append(burst, op{root + "/" + name, true}, op{fmt.Sprintf("%s/old-%04d", root, i), false})
	}
	rand.New(rand.NewPCG(seed, 7)).Shuffle(len(burst), func(i, j int) { burst[i], burst[j] = burst[j], burst[i] })

	octx, stop := context.WithCancel(ctx)
	defer stop()
	until, err := observe(octx, root)
	if err != nil {
		return 0, err
	}
	converged := until(want) // no state before the burst's last change is want: each change is to a name of its own

	work := make(chan op)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var last time.Time
	var werr error
	for range burstWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				var err error
				if o.create {
					_, err = conn.Create(o.path, data, 0, acl)
				} else {
					err = conn.Delete(o.path, -1)
				}
				mu.Lock()
				last = time.Now()
				if err != nil && werr == nil {
					werr = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, o := range burst {
		work <- o
	}
	close(work)
	wg.Wait()
	if werr != nil {
		return 0, werr
	}
	var took time.Duration
	select {
	case at := <-converged:
		took = at.Sub(last)
	case <-ctx.Done():
		return 0, fmt.Errorf("no convergence: %w", ctx.Err())
	}
	stop()
	for name := range want {
		ops = append(ops, &zk.DeleteRequest{Path: root + "/" + name, Version: -1})
		if len(ops) == 100 {
			if _, err := conn.Multi(ops...); err != nil {
				return 0, err
			}
			ops = ops[:0]
		}
	}
	return took, conn.Delete(root, -1)
}

// childSet tracks a set of names against a wanted one: mismatch is the
// size of their symmetric difference, kept as names come and go.
type childSet struct {
	have, want map[string]bool
	mismatch   int
}

func (c *childSet) setWant(want map[string]bool) {
	c.want, c.mismatch = want, 0
	for n := range c.have {
		if !want[n] {
			c.mismatch++
		}
	}
	for n := range want {
		if !c.have[n] {
			c.mismatch++
		}
	}
}

func (c *childSet) add(n string) {
	if c.have[n] {
		return
	}
	c.have[n] = true
	if c.want != nil {
		if c.want[n] {
			c.mismatch--
		} else {
			c.mismatch++
		}
	}
}

func (c *childSet) remove(n string) {
	if !c.have[n] {
		return
	}
	delete(c.have, n)
	if c.want != nil {
		if c.want[n] {
			c.mismatch++
		} else {
			c.mismatch--
		}
	}
}

func (c *childSet) converged() bool { return c.want != nil && c.mismatch == 0 }

// treeCacheObserver follows root with a zkrecipes TreeCache on a Session
// made with opts, from the cache's events.
func treeCacheObserver(e Env, opts ...zr.SessionOption) burstObserver {
	return func(ctx context.Context, root string) (func(map[string]bool) <-chan time.Time, error) {
		s, err := zr.Connect(ctx, e.Servers, append([]zr.SessionOption{zr.WithSessionTimeout(SessionTimeout), zr.WithDialer(LoopbackDialer)}, opts...)...)
		if err != nil {
			return nil, err
		}
		c := zr.NewTreeCache(s, root)
		if err := c.Start(ctx); err != nil {
			_ = s.Close()
			return nil, err
		}
		wants := make(chan map[string]bool, 1)
		out := make(chan time.Time, 1)
		go func() {
			defer s.Close()
			defer c.Close(context.Background())
			set := &childSet{have: map[string]bool{}}
			prefix := root + "/"
			for {
				select {
				case ev, ok := <-c.Events():
					if !ok {
						return
					}
					if ev.Node == nil || len(ev.Node.Path) <= len(prefix) || ev.Node.Path[:len(prefix)] != prefix {
						continue
					}
					switch name := ev.Node.Path[len(prefix):]; ev.Kind {
					case zr.NodeCreated:
						set.add(name)
					case zr.NodeDeleted:
						set.remove(name)
					}
				case w := <-wants:
					set.setWant(w)
				case <-ctx.Done():
					return
				}
				if set.converged() {
					out <- time.Now()
					set.want = nil
				}
			}
		}()
		return func(want map[string]bool) <-chan time.Time { wants <- want; return out }, nil
	}
}

// rawChildrenObserver follows root as a plain go-zookeeper client doing
// the least work: a children watch, and a listing (with the next watch)
// each time it fires; it reads no data.
func rawChildrenObserver(e Env) burstObserver {
	return func(ctx context.Context, root string) (func(map[string]bool) <-chan time.Time, error) {
		conn, err := ConnectRaw(ctx, e.Servers)
		if err != nil {
			return nil, err
		}
		kids, _, ch, err := conn.ChildrenW(root)
		if err != nil {
			conn.Close()
			return nil, err
		}
		wants := make(chan map[string]bool, 1)
		out := make(chan time.Time, 1)
		go func() {
			defer conn.Close()
			var want map[string]bool
			equal := func() bool {
				if want == nil || len(kids) != len(want) {
					return false
				}
				for _, k := range kids {
					if !want[k] {
						return false
					}
				}
				return true
			}
			for {
				select {
				case <-ch:
					kids, _, ch, err = conn.ChildrenW(root)
					if err != nil {
						return
					}
				case want = <-wants:
				case <-ctx.Done():
					return
				}
				if equal() {
					out <- time.Now()
					want = nil
				}
			}
		}()
		return func(want map[string]bool) <-chan time.Time { wants <- want; return out }, nil
	}
}

// rawDataObserver follows root as a plain go-zookeeper client that holds
// what a cache holds (every child's data) with the least work: a children
// watch, and each time it fires a listing (with the next watch), then one
// getData of each new child, sent together from burstWriters goroutines.
func rawDataObserver(e Env) burstObserver {
	return func(ctx context.Context, root string) (func(map[string]bool) <-chan time.Time, error) {
		conn, err := ConnectRaw(ctx, e.Servers)
		if err != nil {
			return nil, err
		}
		have := map[string][]byte{}
		var ch <-chan zk.Event
		list := func() error {
			var kids []string
			kids, _, ch, err = conn.ChildrenW(root)
			if err != nil {
				return err
			}
			listed := make(map[string]bool, len(kids))
			var fresh []string
			for _, k := range kids {
				listed[k] = true
				if _, ok := have[k]; !ok {
					fresh = append(fresh, k)
				}
			}
			for k := range have {
				if !listed[k] {
					delete(have, k)
				}
			}
			data := make([][]byte, len(fresh))
			var wg sync.WaitGroup
			for w := range min(burstWriters, len(fresh)) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < len(fresh); i += burstWriters {
						data[i], _, _ = conn.Get(root + "/" + fresh[i]) // a node gone meanwhile: the next listing drops it
					}
				}()
			}
			wg.Wait()
			for i, k := range fresh {
				have[k] = data[i]
			}
			return nil
		}
		if err := list(); err != nil {
			conn.Close()
			return nil, err
		}
		wants := make(chan map[string]bool, 1)
		out := make(chan time.Time, 1)
		go func() {
			defer conn.Close()
			var want map[string]bool
			equal := func() bool {
				if want == nil || len(have) != len(want) {
					return false
				}
				for k := range have {
					if !want[k] {
						return false
					}
				}
				return true
			}
			for {
				select {
				case <-ch:
					if list() != nil {
						return
					}
				case want = <-wants:
				case <-ctx.Done():
					return
				}
				if equal() {
					out <- time.Now()
					want = nil
				}
			}
		}()
		return func(want map[string]bool) <-chan time.Time { wants <- want; return out }, nil
	}
}
