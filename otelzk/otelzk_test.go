package otelzk_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/otelzk"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// One standalone server for the tests that inject no server fault.
var (
	shared    *zktest.Cluster
	sharedErr error
)

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	shared, sharedErr = zktest.StartCluster(ctx)
	cancel()
	code := m.Run()
	if shared != nil {
		_ = shared.Close()
	}
	os.Exit(code)
}

func server(tb testing.TB) *zktest.Cluster {
	tb.Helper()
	if sharedErr != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("no ZooKeeper: %v", sharedErr)
		}
		tb.Skipf("no ZooKeeper: %v", sharedErr)
	}
	return shared
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func testPath(tb testing.TB) string { return "/otel/" + unsafe.ReplaceAllString(tb.Name(), "_") }

func ctxT(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// rig is a Session observed by an otelzk.Observer on in-memory readers.
type rig struct {
	*zr.Session
	reader  *sdkmetric.ManualReader
	spans   *tracetest.SpanRecorder
	tp      *sdktrace.TracerProvider
	capture *zktest.SessionCapture
	cluster *zktest.Cluster
}

func newRig(t *testing.T, c *zktest.Cluster, addrs []string, opts ...zr.SessionOption) *rig {
	t.Helper()
	return newRigWith(t, c, addrs, nil, opts...)
}

// newRigWith is newRig with the Observer's options.
func newRigWith(t *testing.T, c *zktest.Cluster, addrs []string, oopts []otelzk.Option, opts ...zr.SessionOption) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), capture: &zktest.SessionCapture{}, cluster: c}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	obs, err := otelzk.New(append([]otelzk.Option{otelzk.WithMeterProvider(mp), otelzk.WithTracerProvider(r.tp)}, oopts...)...)
	require.NoError(t, err)
	if addrs == nil {
		addrs = c.Servers()
	}
	opts = append([]zr.SessionOption{zr.WithSessionTimeout(4 * time.Second), zr.WithDialer(r.capture.Dialer()), zr.WithObserver(obs)}, opts...)
	s, err := zr.Connect(ctxT(t, 30*time.Second), addrs, opts...)
	require.NoError(t, err)
	r.Session = s
	t.Cleanup(func() { _ = s.Close() })
	return r
}

// collect reads the metrics. It may run in a require.Eventually
// condition, off the test's goroutine: a failed read fails the test, and
// the metrics read so far are returned.
func (r *rig) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	assert.NoError(t, r.reader.Collect(context.Background(), &rm))
	return rm
}

// find returns the metric named name, or false.
func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// matches reports whether set holds every attribute of want.
func matches(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// sum adds up the points of a counter, up-down counter or gauge (the last
// value of each series) whose attributes hold want.
func (r *rig) sum(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := find(r.collect(t), name)
	if !ok {
		return 0
	}
	var n int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				n += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				n += p.Value
			}
		}
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return n
}

// hist returns the count and sum of a histogram's points whose attributes
// hold want.
func (r *rig) hist(t *testing.T, name string, want ...attribute.KeyValue) (count uint64, sum float64) {
	t.Helper()
	m, ok := find(r.collect(t), name)
	if !ok {
		return 0, 0
	}
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				count += p.Count
				sum += p.Sum
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				count += p.Count
				sum += float64(p.Sum)
			}
		}
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return count, sum
}

// allAttrs returns every attribute value of every metric point.
func (r *rig) allAttrs(t *testing.T) []string {
	var out []string
	for _, sm := range r.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			}
			for _, s := range sets {
				for _, kv := range s.ToSlice() {
					out = append(out, m.Name+" "+string(kv.Key)+"="+kv.Value.String())
				}
			}
		}
	}
	return out
}

func (r *rig) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

var (
	kindMutex = otelzk.AttrRecipeKind.String(zr.KindMutex)
	released  = otelzk.AttrEndCause.String(string(zr.EndReleased))
)

// An acquisition under the caller's span is a span under it, its requests
// spans under that; the wait, the grant, the hold and the requests are
// recorded under the recipe's name, and no attribute carries the path.
func TestAcquireAndReleaseRecordWaitHoldRequestsAndSpansUnderTheCallersSpan(t *testing.T) {
	r := newRig(t, server(t), nil)
	path := testPath(t)
	m := zr.NewMutex(r.Session, path, zr.WithName("orders"))
	name := otelzk.AttrRecipeName.String("orders")

	ctx, parent := r.tp.Tracer("test").Start(ctxT(t, 20*time.Second), "handle-order")
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lease.held", kindMutex, name))
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lock.waiters", kindMutex, name))
	require.NoError(t, l.Release(ctx))
	parent.End()

	n, _ := r.hist(t, "zookeeper.lock.wait.duration", kindMutex, name)
	require.EqualValues(t, 1, n, "one wait recorded")
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lock.acquisitions", kindMutex, name))
	n, _ = r.hist(t, "zookeeper.lock.hold.duration", kindMutex, name, released)
	require.EqualValues(t, 1, n, "one hold recorded, released")
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lease.held", kindMutex, name))
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lease.lost"))
	n, _ = r.hist(t, "zookeeper.lock.queue.position", kindMutex, name)
	require.EqualValues(t, 1, n, "the queue position recorded")
	n, _ = r.hist(t, "zookeeper.client.operation.duration", otelzk.AttrOperation.String("create"))
	require.GreaterOrEqual(t, n, uint64(1), "the create recorded")
	n, _ = r.hist(t, "zookeeper.client.operation.duration", otelzk.AttrOperation.String("delete"))
	require.GreaterOrEqual(t, n, uint64(1), "the release's delete recorded")
	for _, a := range r.allAttrs(t) {
		require.NotContains(t, a, path, "no attribute carries the path")
	}

	acq := r.ended("zkrecipes.acquire mutex")
	require.Len(t, acq, 1)
	require.Equal(t, parent.SpanContext().SpanID(), acq[0].Parent().SpanID(), "the acquisition is under the caller's span")
	require.Equal(t, codes.Unset, acq[0].Status().Code)
	creates := r.ended("zookeeper create")
	require.NotEmpty(t, creates)
	require.Equal(t, acq[0].SpanContext().SpanID(), creates[0].Parent().SpanID(), "its create is under the acquisition")
	require.Equal(t, trace.SpanKindClient, creates[0].SpanKind())
	deletes := r.ended("zookeeper delete")
	require.NotEmpty(t, deletes)
	require.Equal(t, parent.SpanContext().SpanID(), deletes[0].Parent().SpanID(), "the release's delete is under the caller's span")
}

// A waiter is counted while it waits, and its queue position and its wait
// are recorded once granted.
func TestWaiterIsCountedWhileWaitingAndItsPositionAndWaitRecorded(t *testing.T) {
	c := server(t)
	r := newRig(t, c, nil)
	other := newRig(t, c, nil)
	path := testPath(t)
	held, err := zr.NewMutex(other.Session, path).Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	watches, err := watchCount(c) // the holder's, and none other
	require.NoError(t, err)

	got := make(chan error, 1)
	var lease *zr.Lease
	go func() {
		var err error
		lease, err = zr.NewMutex(r.Session, path).Acquire(ctxT(t, 20*time.Second))
		got <- err
	}()
	require.Eventually(t, func() bool { return r.sum(t, "zookeeper.lock.waiters", kindMutex) == 1 }, 10*time.Second, 5*time.Millisecond)
	// The waiter is counted from its start; its position is taken at its
	// first listing, before it sets its watches. Release only once the
	// server holds them, or it may find the lock free.
	require.Eventually(t, func() bool { n, err := watchCount(c); return err == nil && n > watches }, 20*time.Second, 10*time.Millisecond,
		"the waiter's watches are on the server")
	require.NoError(t, held.Release(ctxT(t, 10*time.Second)))
	require.NoError(t, <-got)
	defer func() { _ = lease.Release(context.Background()) }()

	require.EqualValues(t, 0, r.sum(t, "zookeeper.lock.waiters", kindMutex))
	n, sum := r.hist(t, "zookeeper.lock.queue.position", kindMutex)
	require.EqualValues(t, 1, n)
	require.EqualValues(t, 1, sum, "one contender was ahead")
	n, wait := r.hist(t, "zookeeper.lock.wait.duration", kindMutex)
	require.EqualValues(t, 1, n)
	require.Positive(t, wait)
}

// watchCount is the number of watches c's server holds (mntr's
// zk_watch_count: data and child watches; the four-letter words that
// list watches show data watches only), or an error. It may run in a
// require.Eventually condition, off the test's goroutine.
func watchCount(c *zktest.Cluster) (int, error) {
	m, err := zktest.Mntr(context.Background(), c.Servers()[0])
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(m["zk_watch_count"])
}

// A TryAcquire that finds the lock held is counted with error.type
// "locked", and its span is not in error; a failed request is recorded
// with its error.type and its span is in error.
func TestTryAcquireLockedAndAFailedRequestAreRecordedWithTheirErrorType(t *testing.T) {
	c := server(t)
	r := newRig(t, c, nil)
	other := newRig(t, c, nil)
	path := testPath(t)
	held, err := zr.NewMutex(other.Session, path).Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	defer func() { _ = held.Release(context.Background()) }()

	_, err = zr.NewMutex(r.Session, path).TryAcquire(ctxT(t, 10*time.Second))
	require.ErrorIs(t, err, zr.ErrLocked)
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lock.acquisitions", kindMutex, otelzk.AttrErrorType.String("locked")))
	acq := r.ended("zkrecipes.acquire mutex")
	require.Len(t, acq, 1)
	require.Equal(t, codes.Unset, acq[0].Status().Code, "locked is an answer, not a failure")

	ctx, parent := r.tp.Tracer("test").Start(ctxT(t, 10*time.Second), "list")
	_, err = zr.NewMutex(r.Session, path+"/missing").Participants(ctx) // lists a path that does not exist
	require.NoError(t, err)
	parent.End()
	n, _ := r.hist(t, "zookeeper.client.operation.duration", otelzk.AttrOperation.String("getChildren"), otelzk.AttrErrorType.String("no_node"))
	require.EqualValues(t, 1, n)
	var failed []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Status().Code == codes.Error {
			failed = append(failed, s)
		}
	}
	require.Len(t, failed, 1)
	require.Equal(t, "zookeeper getChildren", failed[0].Name())
	require.Equal(t, parent.SpanContext().SpanID(), failed[0].Parent().SpanID())
	require.NotEmpty(t, failed[0].Events(), "the error is recorded on the span")
}

// An expired session counts one lease lost with cause "expired", records a
// span in error, and counts the Session's LOST and RECONNECTED states.
func TestExpiredSessionCountsOneLossWithCauseExpired(t *testing.T) {
	c := server(t)
	r := newRig(t, c, nil, zr.WithLossPolicy(zr.LoseOnLost))
	l, err := zr.NewMutex(r.Session, testPath(t), zr.WithName("orders")).Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, c.ExpireSession(ctxT(t, 10*time.Second), r.capture))
	select {
	case <-l.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("lease not lost after its session expired")
	}
	require.ErrorIs(t, l.Err(), zr.ErrSessionExpired)
	expired := otelzk.AttrEndCause.String("expired")
	require.Eventually(t, func() bool { return r.sum(t, "zookeeper.lease.lost", kindMutex, expired) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lease.lost"), "one loss in all")
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lease.held"))
	lost := r.ended("zkrecipes.lease.lost mutex")
	require.Len(t, lost, 1)
	require.Equal(t, codes.Error, lost[0].Status().Code)

	require.Eventually(t, func() bool { return r.sum(t, "zookeeper.session.reconnects") == 1 }, 20*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 1, r.sum(t, "zookeeper.session.state.changes", otelzk.AttrState.String("LOST")))
	require.EqualValues(t, 1, r.sum(t, "zookeeper.session.state", otelzk.AttrState.String("RECONNECTED")))
	require.EqualValues(t, 1, r.sum(t, "zookeeper.session.state"), "one state is current")
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lock.acquisitions"))
}

// A revocable lease released after a revocation request ends with cause
// "revoked".
func TestRevokedLeaseIsCountedWithCauseRevoked(t *testing.T) {
	c := server(t)
	r := newRig(t, c, nil)
	other := newRig(t, c, nil)
	l, err := zr.NewMutex(r.Session, testPath(t), zr.WithRevocable(true)).Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, zr.Revoke(ctxT(t, 10*time.Second), other.Session, l.Path()))
	select {
	case <-l.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("revocation not heard")
	}
	require.NoError(t, l.Release(ctxT(t, 10*time.Second)))
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lease.lost", kindMutex, otelzk.AttrEndCause.String("revoked")))
	n, _ := r.hist(t, "zookeeper.lock.hold.duration", otelzk.AttrEndCause.String("revoked"))
	require.EqualValues(t, 1, n)
}

// A lease whose lease time ends is counted lost with cause "lease_time".
func TestLeaseTimeEndIsCountedWithCauseLeaseTime(t *testing.T) {
	r := newRig(t, server(t), nil)
	l, err := zr.NewMutex(r.Session, testPath(t), zr.WithLeaseTime(200*time.Millisecond)).Acquire(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease time did not end the lease")
	}
	require.ErrorIs(t, l.Err(), zr.ErrLeaseExpired)
	require.Eventually(t, func() bool {
		return r.sum(t, "zookeeper.lease.lost", kindMutex, otelzk.AttrEndCause.String("lease_time")) == 1
	}, 5*time.Second, 5*time.Millisecond)
	n, held := r.hist(t, "zookeeper.lock.hold.duration", otelzk.AttrEndCause.String("lease_time"))
	require.EqualValues(t, 1, n)
	require.GreaterOrEqual(t, held, 0.2)
}

// A Semaphore's acquisition of n leases counts n held leases, each ended
// on its own.
func TestSemaphoreAcquisitionCountsEachLease(t *testing.T) {
	r := newRig(t, server(t), nil)
	kind := otelzk.AttrRecipeKind.String(zr.KindSemaphore)
	ls, err := zr.NewSemaphore(r.Session, testPath(t), 3, zr.WithName("slots")).Acquire(ctxT(t, 10*time.Second), 2)
	require.NoError(t, err)
	name := otelzk.AttrRecipeName.String("slots")
	require.EqualValues(t, 2, r.sum(t, "zookeeper.lease.held", kind, name))
	require.EqualValues(t, 1, r.sum(t, "zookeeper.lock.acquisitions", kind, name))
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lock.acquisitions", kindMutex), "its inner mutex is not reported")
	for _, l := range ls {
		require.NoError(t, l.Release(ctxT(t, 10*time.Second)))
	}
	require.EqualValues(t, 0, r.sum(t, "zookeeper.lease.held", kind))
	n, _ := r.hist(t, "zookeeper.lock.hold.duration", kind, released)
	require.EqualValues(t, 2, n)
}

// Leadership gained and lost are counted, under the Session's path names.
func TestElectionCountsLeadershipGainedAndLost(t *testing.T) {
	r := newRig(t, server(t), nil, zr.WithPathNames(func(p string) string {
		if strings.HasPrefix(p, "/otel/") {
			return "scheduler"
		}
		return "other"
	}))
	e := zr.NewElection(r.Session, testPath(t))
	l, err := e.Campaign(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	name := otelzk.AttrRecipeName.String("scheduler")
	require.EqualValues(t, 1, r.sum(t, "zookeeper.leader.changes", name, otelzk.AttrLeader.String("gained")))
	require.NoError(t, l.Release(ctxT(t, 10*time.Second)))
	require.EqualValues(t, 1, r.sum(t, "zookeeper.leader.changes", name, otelzk.AttrLeader.String("lost")))
	n, _ := r.hist(t, "zookeeper.client.operation.duration", name, otelzk.AttrOperation.String("create"))
	require.GreaterOrEqual(t, n, uint64(1), "requests carry the path's name")
}

// A TreeCache counts its first load, then a resync after the connection
// dropped and came back, with its size and backlog.
func TestTreeCacheResyncAfterReconnectIsCounted(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	r := newRig(t, c, []string{proxy.Addr()})
	conn := c.Observer(t)
	root := testPath(t)
	for _, p := range []string{"/otel", root, root + "/a", root + "/b"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			require.NoError(t, err)
		}
	}
	cache := zr.NewTreeCache(r.Session, root)
	defer func() { _ = cache.Close(context.Background()) }()
	require.NoError(t, cache.Start(ctxT(t, 20*time.Second)))
	go func() {
		for range cache.Events() {
		}
	}()
	kind := otelzk.AttrRecipeKind.String(zr.KindTreeCache)
	require.EqualValues(t, 1, r.sum(t, "zookeeper.cache.syncs", kind, otelzk.AttrSyncKind.String("initial")))
	require.EqualValues(t, 0, r.sum(t, "zookeeper.cache.syncs", kind, otelzk.AttrSyncKind.String("resync")))
	require.EqualValues(t, 3, r.sum(t, "zookeeper.cache.nodes", kind))

	proxy.ResetAll()
	require.Eventually(t, func() bool {
		return r.sum(t, "zookeeper.cache.syncs", kind, otelzk.AttrSyncKind.String("resync")) >= 1
	}, 20*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, r.sum(t, "zookeeper.session.reconnects"), int64(1))
	require.EqualValues(t, 3, r.sum(t, "zookeeper.cache.nodes", kind))
	m, ok := find(r.collect(t), "zookeeper.cache.backlog")
	require.True(t, ok, "the backlog is recorded")
	require.NotEmpty(t, m.Data.(metricdata.Gauge[int64]).DataPoints)
}

// A discovery cache reports the instances it sees, by service.
func TestDiscoveryInstancesSeenAreRecorded(t *testing.T) {
	r := newRig(t, server(t), nil)
	d := discovery.New(r.Session, testPath(t))
	defer func() { _ = d.Close(context.Background()) }()
	for i := range 2 {
		require.NoError(t, d.Register(ctxT(t, 10*time.Second), discovery.Instance{Name: "greeter", ID: fmt.Sprint("g", i), Address: "127.0.0.1", Port: 8000 + i}))
	}
	sc := d.NewCache("greeter")
	defer func() { _ = sc.Close(context.Background()) }()
	require.NoError(t, sc.Start(ctxT(t, 10*time.Second)))
	svc := otelzk.AttrService.String("greeter")
	require.Eventually(t, func() bool { return r.sum(t, "zookeeper.discovery.instances", svc) == 2 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, d.Unregister(ctxT(t, 10*time.Second), "greeter", "g0"))
	require.Eventually(t, func() bool { return r.sum(t, "zookeeper.discovery.instances", svc) == 1 }, 10*time.Second, 5*time.Millisecond)
}

// ErrorType names failures by their sentinel, never by their text.
func TestErrorTypeIsLowCardinality(t *testing.T) {
	assert.Equal(t, "no_node", otelzk.ErrorType(fmt.Errorf("zkrecipes: /a/b/c: %w", zk.ErrNoNode)))
	assert.Equal(t, "canceled", otelzk.ErrorType(context.Canceled))
	assert.Equal(t, "locked", otelzk.ErrorType(fmt.Errorf("%w: /x", zr.ErrLocked)))
	assert.Equal(t, "other", otelzk.ErrorType(fmt.Errorf("something at /x/y")))
}

// Without WithRawPaths no span carries a raw path, not even the message
// of an error recorded on it: an acquisition refused by the node's ACL
// fails with an error that names the node, and its spans (the
// acquisition's and its requests') record the error without the path.
// With WithRawPaths the message is kept as it is.
func TestRecordedErrorsCarryNoRawPathWithoutWithRawPaths(t *testing.T) {
	c := server(t)
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw=%v", raw), func(t *testing.T) {
			var oopts []otelzk.Option
			if raw {
				oopts = append(oopts, otelzk.WithRawPaths())
			}
			r := newRigWith(t, c, nil, oopts)
			secret := "customer-4711-" + unsafe.ReplaceAllString(t.Name(), "_")
			path := testPath(t) + "/" + secret
			for _, p := range []string{"/otel", testPath(t)} {
				if _, err := r.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					require.ErrorIs(t, err, zk.ErrNodeExists)
				}
			}
			_, err := r.Conn().Create(path, nil, 0, zk.WorldACL(zk.PermRead)) // no one may create below it
			require.NoError(t, err)
			t.Cleanup(func() { _ = r.Conn().Delete(path, -1) })

			ctx, parent := r.tp.Tracer("test").Start(ctxT(t, 10*time.Second), "acquire")
			_, err = zr.NewMutex(r.Session, path).Acquire(ctx)
			parent.End()
			require.ErrorIs(t, err, zk.ErrNoAuth)
			require.Contains(t, err.Error(), secret, "the error names the node")

			var messages []string
			for _, s := range r.spans.Ended() {
				for _, a := range s.Attributes() {
					if a.Key != otelzk.AttrRecipePath {
						messages = append(messages, a.Value.String())
					}
				}
				for _, ev := range s.Events() {
					for _, a := range ev.Attributes {
						messages = append(messages, a.Value.String())
					}
				}
				messages = append(messages, s.Status().Description, s.Name())
			}
			all := strings.Join(messages, "\n")
			require.Contains(t, all, "no_auth", "the error is recorded")
			if raw {
				require.Contains(t, all, secret, "WithRawPaths keeps the message")
			} else {
				require.NotContains(t, all, secret)
				require.Contains(t, all, "zkrecipes: create <path>: zk: not authenticated", "the message stays, without the path")
			}
		})
	}
}

// With flap damping, each suspension while the damping holds recipes back
// counts one flap damped: two flaps in a row, one damped (the first
// begins the damping).
func TestFlapsDampedAreCounted(t *testing.T) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	r := newRig(t, c, []string{proxy.Addr()}, zr.WithFlapDamping(zr.RetryNTimes(20, 8*time.Second)))
	subCtx, cancel := context.WithCancel(context.Background())
	states, _ := r.Subscribe(subCtx)
	defer cancel()
	next := func(want zr.ConnState) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case ch := <-states:
				if ch.State == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %v", want)
			}
		}
	}
	for i := 0; i < 2; i++ {
		proxy.ResetAll()
		next(zr.StateSuspended)
		next(zr.StateReconnected)
	}
	// A busy machine may drop the connection on its own too (the shared
	// server grants 4s sessions): each such suspension can add a flap.
	suspended := r.sum(t, "zookeeper.session.state.changes", otelzk.AttrState.String("SUSPENDED"))
	require.GreaterOrEqual(t, suspended, int64(2))
	flaps := r.sum(t, "zookeeper.session.flaps_damped")
	require.GreaterOrEqual(t, flaps, int64(1), "the second flap is damped")
	require.LessOrEqual(t, flaps, suspended-1, "the first suspension is not a flap damped")
}
