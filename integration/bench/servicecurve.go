package bench

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The service curve (issue 45): a discovery ServiceCache of one service
// with a growing number of instances, in Curator's discovery layout
// (<base>/<service>/<id>, each instance's node holding Curator's
// ServiceInstance JSON), beside the reads its load must make at least
// (the raw floor) and Curator 5.4's ServiceCache
// (servicecurve_curator.go). It reuses the cache curve's multis, floor,
// resync and CacheRun.

// ServiceSet is a service of the service curve: Instances instances
// registered under Base/Name, each a persistent node (Static).
type ServiceSet struct {
	Base      string `json:"base"`
	Name      string `json:"name"`
	Instances int    `json:"instances"`
}

// serviceSetName is the name of the service of a ServiceSet.
const serviceSetName = "svc"

// serviceBatch is the most instances BuildServiceSet creates in one multi
// request: some 500 KB of paths and JSON (an instance's is some 400 B,
// its URI spec included), below the server's 1 MB jute.maxbuffer.
const serviceBatch = 1000

// NewServiceSet returns the service of n instances under base.
func NewServiceSet(base string, n int) ServiceSet {
	return ServiceSet{Base: base, Name: serviceSetName, Instances: n}
}

// Path returns the service's node: Base/Name.
func (s ServiceSet) Path() string { return s.Base + "/" + s.Name }

// ID returns the ID of instance i: 36 characters, as long as the random
// UUID Curator gives an instance by default, so that the service's
// listing is as large as a Curator-registered one (some 40 bytes an
// instance).
func (s ServiceSet) ID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// serviceRegistered is the registration time of every instance.
var serviceRegistered = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Instance returns instance i; port picks its port (instances changed
// during a drop get another).
func (s ServiceSet) Instance(i, port int) discovery.Instance {
	return discovery.Instance{Name: s.Name, ID: s.ID(i), Address: "127.0.0.1", Port: port,
		RegistrationTime: serviceRegistered, Type: discovery.Static, URISpec: "{scheme}://{address}:{port}/"}
}

// instanceOp returns the request that creates (or, set, sets) instance
// i's node with its JSON (discovery.Instance.Marshal, Curator's format).
func (s ServiceSet) instanceOp(i, port int, set bool) (any, error) {
	data, err := s.Instance(i, port).Marshal()
	if err != nil {
		return nil, fmt.Errorf("bench: instance %d: %w", i, err)
	}
	p := s.Path() + "/" + s.ID(i)
	if set {
		return &zk.SetDataRequest{Path: p, Data: data, Version: -1}, nil
	}
	return &zk.CreateRequest{Path: p, Data: data, Acl: zk.WorldACL(zk.PermAll)}, nil
}

// BuildServiceSet creates s on conn: Base (and its parents, where
// missing), the service's node, then the instances in multi requests of
// serviceBatch creates, 8 in flight (runMultis). It returns the time the
// multis took. No instance may exist yet; DeleteCacheTree(Base) deletes
// them all.
func BuildServiceSet(ctx context.Context, conn *zk.Conn, s ServiceSet) (time.Duration, error) {
	if err := ensurePath(conn, s.Path()); err != nil {
		return 0, err
	}
	t0 := time.Now()
	var failed atomic.Pointer[error]
	batches := (s.Instances + serviceBatch - 1) / serviceBatch
	err := runMultis(ctx, conn, batches, func(b int) (string, []any) {
		ops := make([]any, 0, serviceBatch)
		for i := b * serviceBatch; i < min((b+1)*serviceBatch, s.Instances); i++ {
			op, err := s.instanceOp(i, 10000+i%50000, false)
			if err != nil {
				failed.CompareAndSwap(nil, &err)
				return "", nil
			}
			ops = append(ops, op)
		}
		return fmt.Sprintf("register instances %d to %d", b*serviceBatch, b*serviceBatch+len(ops)-1), ops
	})
	if e := failed.Load(); e != nil && err == nil {
		err = *e
	}
	return time.Since(t0), err
}

// RawServiceLoad is the service curve's floor: the reads any load of s
// must make, RawTreeLoad's walk of the service's node on a plain
// connection from RawTreeLoadWorkers goroutines: the listing of its
// instances and a getData of each (and one getData of the service's node,
// which tells the walk it has children). Nodes is the instances read.
func RawServiceLoad(ctx context.Context, env Env, s ServiceSet) (CacheRun, error) {
	r, err := RawTreeLoad(ctx, env, s.Path())
	r.Nodes = max(r.Nodes-1, 0)
	return r, err
}

// ServiceCacheRun measures a zkrecipes discovery ServiceCache of s, twice
// on a Session of its own. First connected to the server directly, as
// the floor is: the load (Start, which returns once the instances are
// loaded), the heap it keeps per instance (live heap after a GC, less the
// one before Start), the server watches it adds, and the mismatches
// against a fresh listing. Then, loaded again unmeasured, through a
// loopback proxy: the resync after a connection drop
// (serviceResyncAfterDrop; rep picks the instances it changes), after
// which the instances that differ from a fresh listing are added to
// Mismatches.
func ServiceCacheRun(ctx context.Context, env Env, s ServiceSet, rep int) (CacheRun, error) {
	cost := &loadCost{env: env}
	c, load, closeCache, err := startServiceCache(ctx, env.ServerFor(0), s, cost.baseline(ctx))
	defer closeCache()
	if err != nil {
		return CacheRun{}, err
	}
	r := CacheRun{Load: load, Nodes: c.len()}
	if err := cost.measure(ctx, &r); err != nil {
		return CacheRun{}, err
	}
	if r.Mismatches, err = serviceMismatches(ctx, env, s, c); err != nil {
		return CacheRun{}, err
	}
	closeCache()

	proxy, err := zktest.ListenProxy(env.ServerFor(0)[0])
	if err != nil {
		return CacheRun{}, err
	}
	defer proxy.Close()
	c, _, closeCache, err = startServiceCache(ctx, []string{proxy.Addr()}, s, nil)
	defer closeCache()
	if err != nil {
		return CacheRun{}, err
	}
	w, err := env.Meter.Read(ctx)
	if err != nil {
		return CacheRun{}, err
	}
	if r.Resync, r.EventsMissed, err = serviceResyncAfterDrop(ctx, env, proxy, c, s, rep, w.Watches); err != nil {
		return CacheRun{}, err
	}
	after, err := serviceMismatches(ctx, env, s, c)
	r.Mismatches += after
	return r, err
}

// serviceCache is a started ServiceCache and its Session.
type serviceCache struct {
	s *zr.Session
	c *discovery.ServiceCache
}

// len returns the instances the cache holds.
func (c serviceCache) len() int {
	insts, _ := c.c.Instances()
	return len(insts)
}

// startServiceCache connects a Session to servers (connectCacheSession)
// calls before (unless nil), and starts a ServiceCache of s on it,
// returning once Start does (the instances loaded) and the time Start
// took. closeCache closes the cache and the Session, once however often
// it is called; call it even after an error.
func startServiceCache(ctx context.Context, servers []string, s ServiceSet, before func() error) (serviceCache, time.Duration, func(), error) {
	sess, err := connectCacheSession(ctx, servers)
	if err != nil {
		return serviceCache{}, 0, func() {}, err
	}
	c := discovery.New(sess, s.Base).NewCache(s.Name)
	closeCache := sync.OnceFunc(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(cctx)
		_ = sess.Close()
	})
	if before != nil {
		if err := before(); err != nil {
			return serviceCache{}, 0, closeCache, err
		}
	}
	t0 := time.Now()
	if err := c.Start(ctx); err != nil {
		return serviceCache{}, 0, closeCache, fmt.Errorf("bench: service cache of %s: %w", s.Path(), err)
	}
	return serviceCache{s: sess, c: c}, time.Since(t0), closeCache, nil
}

// serviceMismatches compares c with a fresh listing of s (walkTree on a
// plain connection of its own, 32 goroutines): the instances read that c
// lacks or holds otherwise (discovery.Unmarshal of the node's data
// differs), plus the instances c holds beyond those read.
func serviceMismatches(ctx context.Context, env Env, s ServiceSet, c serviceCache) (int, error) {
	conn, err := ConnectRaw(ctx, env.ServerFor(0))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	insts, _ := c.c.Instances()
	held := make(map[string]*discovery.Instance, len(insts))
	for i := range insts {
		held[insts[i].ID] = &insts[i]
	}
	var matched, differ atomic.Int64
	prefix := s.Path() + "/"
	_, err = walkTree(ctx, conn, s.Path(), RawTreeLoadWorkers, func(p string, data []byte, _ *zk.Stat) {
		id, ok := strings.CutPrefix(p, prefix)
		if !ok {
			return // the service's node
		}
		want, err := discovery.Unmarshal(data)
		if got := held[id]; got != nil && err == nil && reflect.DeepEqual(*got, want) {
			matched.Add(1)
		} else {
			differ.Add(1)
		}
	})
	if err != nil {
		return 0, err
	}
	return int(differ.Load()) + max(len(insts)-int(matched.Load()), 0), nil
}

// serviceResyncAfterDrop drops the cache's connection and measures its
// resync (timeResync): during the drop, once c's Session is suspended,
// it changes three instances through env's Observer (one's JSON set with
// another port, one registered, one deleted: those rep picks), and the
// cache is whole again once its Instances show the three. The cache has
// no events of its own instances, only a channel closed at each change of
// its copy: the changes missed are those of the three its copy does not
// show when the wait for them ends (5 minutes at most), 0 once whole.
func serviceResyncAfterDrop(ctx context.Context, env Env, proxy *zktest.Proxy, c serviceCache, s ServiceSet, rep int, watches int64) (time.Duration, int, error) {
	setI, createdI, deletedI := 0, s.Instances+rep, 1+rep
	setPort := 60000 + rep
	var ops []any
	for _, o := range []struct {
		i, port int
		set     bool
	}{{setI, setPort, true}, {createdI, 10000, false}} {
		op, err := s.instanceOp(o.i, o.port, o.set)
		if err != nil {
			return 0, 0, err
		}
		ops = append(ops, op)
	}
	ops = append(ops, &zk.DeleteRequest{Path: s.Path() + "/" + s.ID(deletedI), Version: -1})
	suspended := func() error {
		return poll(ctx, 10*time.Second, time.Millisecond, func() (bool, error) { return c.s.State() == zr.StateSuspended, nil })
	}
	change := func() error { return changeDuringDrop(env.Observer, ops) }
	copyOf := newInstancesWatch(c.c, func(insts []discovery.Instance) int {
		set, created, deleted := false, false, true
		for _, in := range insts {
			switch in.ID {
			case s.ID(setI):
				set = in.Port == setPort
			case s.ID(createdI):
				created = true
			case s.ID(deletedI):
				deleted = false
			}
		}
		return btoi(set) + btoi(created) + btoi(deleted)
	})
	var missed atomic.Int64
	whole := func() bool {
		shown := copyOf.read()
		missed.Store(int64(3 - shown))
		return shown == 3
	}
	took, err := timeResync(ctx, env, proxy, "service cache of "+s.Path(), watches, suspended, change, whole)
	if err != nil {
		return 0, 0, fmt.Errorf("%w (%d of the 3 changes not shown)", err, missed.Load())
	}
	return took, int(missed.Load()), nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// instancesWatch follows a ServiceCache's copy cheaply: it reads its
// Instances (a copy of the whole list) only after its channel says the
// copy changed, and keeps what count made of them.
type instancesWatch struct {
	c     *discovery.ServiceCache
	count func([]discovery.Instance) int

	changed <-chan struct{}
	last    int
}

func newInstancesWatch(c *discovery.ServiceCache, count func([]discovery.Instance) int) *instancesWatch {
	w := &instancesWatch{c: c, count: count}
	insts, ch := c.Instances()
	w.last, w.changed = count(insts), ch
	return w
}

// read returns count of the cache's current copy, reading it again only
// if it changed since the last read.
func (w *instancesWatch) read() int {
	select {
	case <-w.changed:
		insts, ch := w.c.Instances()
		w.last, w.changed = w.count(insts), ch
	default:
	}
	return w.last
}
