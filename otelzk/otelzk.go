// Package otelzk reports what zkrecipes does as OpenTelemetry metrics and
// traces: lock waits and holds, leases lost by cause, ZooKeeper request
// latency, Session states and reconnections, cache resyncs, leader changes
// and discovered instances. It is a zkrecipes.Observer:
//
//	obs, err := otelzk.New() // the global MeterProvider and TracerProvider
//	if err != nil { ... }
//	s, err := zkrecipes.Connect(ctx, servers, zkrecipes.WithObserver(obs),
//		zkrecipes.WithPathNames(func(p string) string { return "orders" }))
//
// No attribute carries a raw ZooKeeper path unless WithRawPaths is given,
// not even the message of an error recorded on a span (exception.message,
// where every path is replaced by "<path>"): lock paths are unbounded (a
// lock per entity) and may name the entity. Name recipes instead, with
// zkrecipes.WithName or the Session's zkrecipes.WithPathNames; their name is the zookeeper.recipe.name
// attribute. docs/observability.md lists every metric, span and attribute.
//
// Spans: an acquisition is a span under the caller's (its ctx), the
// ZooKeeper requests it issues (its wait loop's watches and reads
// included) are spans under it, and a request issued under a ctx that
// carries a span is a span under that one. Requests a recipe sends on its
// own, for no caller (a cache's reads, a keeper's writes, a held lease's
// watch, clean-up) are counted in the metrics but get no span: a root span
// each would flood a tracing backend with one-span traces. A lease lost is
// a span of its own, in error.
package otelzk

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the meter and tracer.
const ScopeName = "github.com/zkrecipes/zkrecipes/otelzk"

// Attribute keys.
const (
	AttrRecipeKind = attribute.Key("zookeeper.recipe.kind")    // zkrecipes.Kind*: mutex, rwlock.read, rwlock.write, semaphore, election, treecache, nodecache, discovery, groupmember
	AttrRecipeName = attribute.Key("zookeeper.recipe.name")    // the recipe's name; absent when it has none
	AttrRecipePath = attribute.Key("zookeeper.recipe.path")    // only with WithRawPaths
	AttrOperation  = attribute.Key("zookeeper.operation.name") // create, delete, getData, ...
	AttrErrorType  = attribute.Key("error.type")               // why a request or acquisition failed; absent on success
	AttrEndCause   = attribute.Key("zookeeper.lease.end_cause")
	AttrState      = attribute.Key("zookeeper.session.state")
	AttrLeader     = attribute.Key("zookeeper.leader.change") // gained, lost
	AttrService    = attribute.Key("zookeeper.service.name")
	AttrSyncKind   = attribute.Key("zookeeper.cache.sync")  // initial, resync
	AttrTry        = attribute.Key("zookeeper.acquire.try") // TryAcquire
	// AttrAcquireMode is "reentrant" (the goroutine held the lock already)
	// or "downgrade" (a write lock's holder took the read lock); absent for
	// an acquisition that queued.
	AttrAcquireMode = attribute.Key("zookeeper.acquire.mode")
)

// Histogram bucket boundaries, in seconds.
var (
	// RequestBuckets suit a ZooKeeper round trip: 0.25 ms to 10 s.
	RequestBuckets = []float64{0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	// WaitBuckets suit a lock wait or hold: 1 ms to 10 min.
	WaitBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// PositionBuckets suit a queue position (contenders ahead).
	PositionBuckets = []float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256}
)

// Option configures New.
type Option func(*config)

type config struct {
	mp  metric.MeterProvider
	tp  trace.TracerProvider
	raw bool
}

// WithMeterProvider sets the MeterProvider. Default: otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider sets the TracerProvider. Default:
// otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithRawPaths adds the recipe's path (zookeeper.recipe.path) to the
// recipe metrics and spans, and the node's path to request spans (never to
// the request metric: node names are unique), and keeps the paths in the
// messages of the errors recorded on spans. Paths are unbounded: use it
// only where the set of recipe paths is small and fixed. Default: off.
func WithRawPaths() Option { return func(c *config) { c.raw = true } }

// Observer is a zkrecipes.Observer that records OpenTelemetry metrics and
// spans. Use one Observer per Session: the Session state gauge reflects the
// last Session that changed state. It is safe for concurrent use.
type Observer struct {
	zr.BaseObserver
	tracer trace.Tracer
	raw    bool

	opDur      metric.Float64Histogram
	waitDur    metric.Float64Histogram
	holdDur    metric.Float64Histogram
	position   metric.Int64Histogram
	acquires   metric.Int64Counter
	restarts   metric.Int64Counter
	lost       metric.Int64Counter
	held       metric.Int64UpDownCounter
	waiters    metric.Int64UpDownCounter
	state      metric.Int64Gauge
	changes    metric.Int64Counter
	reconnects metric.Int64Counter
	flaps      metric.Int64Counter
	syncs      metric.Int64Counter
	backlog    metric.Int64Gauge
	cacheNodes metric.Int64Gauge
	leader     metric.Int64Counter
	instances  metric.Int64Gauge

	// The attribute sets already built, so that recording a measurement
	// allocates nothing once a series exists.
	mu    sync.RWMutex
	sets  map[setKey]*series
	opSet map[opKey]*series
}

// series is the options of one attribute set, built once.
type series struct {
	rec       []metric.RecordOption
	add       []metric.AddOption
	spanName  string // the acquisition span's name (recipe series)
	spanStart []trace.SpanStartOption
}

func newSeries(attrs []attribute.KeyValue) *series {
	opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
	return &series{rec: []metric.RecordOption{opt}, add: []metric.AddOption{opt}}
}

// setKey names a recipe series: the recipe (its path only WithRawPaths)
// and at most one more attribute.
type setKey struct {
	kind, name, path string
	k                attribute.Key
	v                string
}

type opKey struct{ op, name, errType string }

var _ zr.Observer = (*Observer)(nil)
var _ discovery.InstancesObserver = (*Observer)(nil)

// New returns an Observer on the providers its options name. It fails only
// if an instrument cannot be created.
func New(opts ...Option) (*Observer, error) {
	c := config{}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	m := c.mp.Meter(ScopeName)
	o := &Observer{tracer: c.tp.Tracer(ScopeName), raw: c.raw,
		sets: map[setKey]*series{}, opSet: map[opKey]*series{}}
	var errs []error
	hist := func(name, desc string, b []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(b...))
		errs = append(errs, err)
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		x, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return x
	}
	updown := func(name, unit, desc string) metric.Int64UpDownCounter {
		x, err := m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return x
	}
	gauge := func(name, unit, desc string) metric.Int64Gauge {
		x, err := m.Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return x
	}
	o.opDur = hist("zookeeper.client.operation.duration", "Duration of ZooKeeper requests, from send to reply.", RequestBuckets)
	o.waitDur = hist("zookeeper.lock.wait.duration", "Time from the start of an acquisition to its grant or failure.", WaitBuckets)
	o.holdDur = hist("zookeeper.lock.hold.duration", "Time a lease was held, from grant to release or loss.", WaitBuckets)
	var err error
	o.position, err = m.Int64Histogram("zookeeper.lock.queue.position", metric.WithUnit("{contender}"),
		metric.WithDescription("Contenders ahead of an acquisition at its first listing."), metric.WithExplicitBucketBoundaries(PositionBuckets...))
	errs = append(errs, err)
	o.acquires = counter("zookeeper.lock.acquisitions", "{acquisition}", "Acquisitions ended, granted or failed (error.type); reentrant ones with zookeeper.acquire.mode.")
	o.restarts = counter("zookeeper.lock.restarts", "{attempt}", "Acquisitions that started over on a new node (session expired or node deleted while waiting).")
	o.lost = counter("zookeeper.lease.lost", "{lease}", "Leases lost, by cause (zookeeper.lease.end_cause).")
	o.held = updown("zookeeper.lease.held", "{lease}", "Leases held now.")
	o.waiters = updown("zookeeper.lock.waiters", "{waiter}", "Acquisitions in progress now.")
	o.state = gauge("zookeeper.session.state", "{state}", "1 for the Session's current state, 0 for the others (zookeeper.session.state).")
	o.changes = counter("zookeeper.session.state.changes", "{change}", "Session state transitions, by the state entered.")
	o.reconnects = counter("zookeeper.session.reconnects", "{reconnect}", "Session reconnections (RECONNECTED).")
	o.flaps = counter("zookeeper.session.flaps_damped", "{flap}", "Connection flaps damped (zkrecipes.WithFlapDamping): suspensions while recipes waited for the connection to settle.")
	o.syncs = counter("zookeeper.cache.syncs", "{sync}", "Whole-tree reads of a cache: initial loads and resyncs after a reconnection.")
	o.backlog = gauge("zookeeper.cache.backlog", "{event}", "Cache events not yet delivered to the reader: at each sync, and when it crosses a power of two from 32 up (0 once drained).")
	o.cacheNodes = gauge("zookeeper.cache.nodes", "{node}", "Nodes a cache holds, at the last load or resync.")
	o.leader = counter("zookeeper.leader.changes", "{change}", "Leadership gained or lost by this process.")
	o.instances = gauge("zookeeper.discovery.instances", "{instance}", "Instances a discovery cache sees, by service.")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}

// recipeAttrs are the attributes of a recipe event.
func (o *Observer) recipeAttrs(r zr.RecipeInfo, extra ...attribute.KeyValue) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 3+len(extra))
	a = append(a, AttrRecipeKind.String(r.Kind))
	if r.Name != "" {
		a = append(a, AttrRecipeName.String(r.Name))
	}
	if o.raw && r.Path != "" {
		a = append(a, AttrRecipePath.String(r.Path))
	}
	return append(a, extra...)
}

// set returns a recipe series, with k=v when k is not "".
func (o *Observer) set(r zr.RecipeInfo, k attribute.Key, v string) *series {
	key := setKey{kind: r.Kind, name: r.Name, k: k, v: v}
	if o.raw {
		key.path = r.Path
	}
	o.mu.RLock()
	opt, ok := o.sets[key]
	o.mu.RUnlock()
	if ok {
		return opt
	}
	var attrs []attribute.KeyValue
	if k != "" {
		attrs = o.recipeAttrs(r, k.String(v))
	} else {
		attrs = o.recipeAttrs(r)
	}
	opt = newSeries(attrs)
	opt.spanName = "zkrecipes.acquire " + r.Kind
	opt.spanStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...)}
	o.mu.Lock()
	o.sets[key] = opt
	o.mu.Unlock()
	return opt
}

// opAttrs are the attributes of a request.
func opAttrs(op, name, errType string) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, AttrOperation.String(op))
	if name != "" {
		attrs = append(attrs, AttrRecipeName.String(name))
	}
	if errType != "" {
		attrs = append(attrs, AttrErrorType.String(errType))
	}
	return attrs
}

// OpDone records a ZooKeeper request, and a span under ctx's span if ctx
// carries one.
func (o *Observer) OpDone(ctx context.Context, ev zr.OpEvent) {
	key := opKey{op: ev.Op, name: ev.Name}
	if ev.Err != nil {
		key.errType = ErrorType(ev.Err)
	}
	o.mu.RLock()
	opt, ok := o.opSet[key]
	o.mu.RUnlock()
	if !ok {
		opt = newSeries(opAttrs(key.op, key.name, key.errType))
		o.mu.Lock()
		o.opSet[key] = opt
		o.mu.Unlock()
	}
	o.opDur.Record(ctx, ev.Latency.Seconds(), opt.rec...)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	attrs := opAttrs(key.op, key.name, key.errType)
	if o.raw {
		attrs = append(attrs, AttrRecipePath.String(ev.Path))
	}
	_, span := o.tracer.Start(ctx, "zookeeper "+ev.Op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(ev.Start), trace.WithAttributes(attrs...))
	if ev.Err != nil {
		o.recordError(span, ev.Err, ev.Path)
		span.SetStatus(codes.Error, ErrorType(ev.Err))
	}
	span.End(trace.WithTimestamp(ev.Start.Add(ev.Latency)))
}

// AcquireStart starts the acquisition's span under ctx's and counts a
// waiter.
func (o *Observer) AcquireStart(ctx context.Context, ev zr.AcquireStartEvent) context.Context {
	se := o.set(ev.Recipe, "", "")
	if !ev.Reentrant {
		o.waiters.Add(ctx, 1, se.add...)
	}
	ctx, span := o.tracer.Start(ctx, se.spanName, se.spanStart...)
	if span.IsRecording() {
		span.SetAttributes(AttrTry.Bool(ev.Try), attribute.Int("zookeeper.acquire.leases", ev.N))
		if m := acquireMode(ev.Reentrant, ev.Downgrade); m != "" {
			span.SetAttributes(AttrAcquireMode.String(m))
		}
	}
	return ctx
}

// acquireMode is the zookeeper.acquire.mode of an acquisition, "" for one
// that queued.
func acquireMode(reentrant, downgrade bool) string {
	switch {
	case reentrant:
		return "reentrant"
	case downgrade:
		return "downgrade"
	}
	return ""
}

// reentered counts a reentrant acquisition (no wait, no new lease held)
// and ends its span.
func (o *Observer) reentered(ctx context.Context, ev zr.AcquireEndEvent) {
	o.acquires.Add(ctx, 1, o.set(ev.Recipe, AttrAcquireMode, "reentrant").add...)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.Int64("zookeeper.lease.token", ev.Token))
		span.End()
	}
}

// AcquireEnd records the wait, the outcome and the grant, and ends the
// acquisition's span.
func (o *Observer) AcquireEnd(ctx context.Context, ev zr.AcquireEndEvent) {
	if ev.Reentrant {
		o.reentered(ctx, ev)
		return
	}
	base := o.set(ev.Recipe, "", "")
	o.waiters.Add(ctx, -1, base.add...)
	res := base
	if ev.Err != nil {
		res = o.set(ev.Recipe, AttrErrorType, ErrorType(ev.Err))
	}
	o.waitDur.Record(ctx, ev.Wait.Seconds(), res.rec...)
	o.acquires.Add(ctx, 1, res.add...)
	if ev.Attempts > 1 {
		o.restarts.Add(ctx, int64(ev.Attempts-1), base.add...)
	}
	if ev.Position >= 0 {
		o.position.Record(ctx, int64(ev.Position), base.rec...)
	}
	if ev.Err == nil {
		o.held.Add(ctx, int64(max(ev.N, 1)), base.add...)
		if ev.Recipe.Kind == zr.KindElection {
			o.leader.Add(ctx, 1, o.set(ev.Recipe, AttrLeader, "gained").add...)
		}
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("zookeeper.acquire.attempts", ev.Attempts),
		attribute.Int("zookeeper.acquire.position", ev.Position))
	switch {
	case ev.Err == nil:
		span.SetAttributes(attribute.Int64("zookeeper.lease.token", ev.Token))
	case ev.Try && errors.Is(ev.Err, zr.ErrLocked):
		span.SetAttributes(AttrErrorType.String(ErrorType(ev.Err))) // an answer, not a failure
	default:
		span.SetAttributes(AttrErrorType.String(ErrorType(ev.Err)))
		o.recordError(span, ev.Err, ev.Recipe.Path)
		span.SetStatus(codes.Error, ErrorType(ev.Err))
	}
	span.End()
}

// LeaseEnd records the hold and, for a loss, counts it by cause and
// records a span in error (under ctx's span, if any).
func (o *Observer) LeaseEnd(ctx context.Context, ev zr.LeaseEndEvent) {
	o.held.Add(ctx, -1, o.set(ev.Recipe, "", "").add...)
	byCause := o.set(ev.Recipe, AttrEndCause, string(ev.Cause))
	o.holdDur.Record(ctx, ev.Held.Seconds(), byCause.rec...)
	if ev.Recipe.Kind == zr.KindElection {
		o.leader.Add(ctx, 1, o.set(ev.Recipe, AttrLeader, "lost").add...)
	}
	if ev.Cause == zr.EndReleased {
		return
	}
	o.lost.Add(ctx, 1, byCause.add...)
	cause := AttrEndCause.String(string(ev.Cause))
	end := time.Now()
	_, span := o.tracer.Start(ctx, "zkrecipes.lease.lost "+ev.Recipe.Kind, trace.WithTimestamp(end.Add(-ev.Held)),
		trace.WithAttributes(o.recipeAttrs(ev.Recipe, cause, attribute.Int64("zookeeper.lease.token", ev.Token))...))
	if ev.Err != nil {
		o.recordError(span, ev.Err, ev.Recipe.Path)
	}
	span.SetStatus(codes.Error, string(ev.Cause))
	span.End(trace.WithTimestamp(end))
}

var states = []zr.ConnState{zr.StateConnecting, zr.StateConnected, zr.StateSuspended, zr.StateReconnected, zr.StateLost, zr.StateClosed}

// StateChanged records the Session's state and counts the transition.
func (o *Observer) StateChanged(ev zr.StateChange) {
	ctx := context.Background()
	for _, st := range states {
		v := int64(0)
		if st == ev.State {
			v = 1
		}
		o.state.Record(ctx, v, metric.WithAttributes(AttrState.String(st.String())))
	}
	o.changes.Add(ctx, 1, metric.WithAttributes(AttrState.String(ev.State.String())))
	if ev.State == zr.StateReconnected {
		o.reconnects.Add(ctx, 1)
	}
}

// FlapDamped counts a connection flap damped.
func (o *Observer) FlapDamped(zr.FlapEvent) {
	o.flaps.Add(context.Background(), 1)
}

// CacheSynced counts a cache's load or resync and records its size and
// backlog.
func (o *Observer) CacheSynced(ev zr.CacheSyncEvent) {
	ctx := context.Background()
	kind := "resync"
	if ev.Initial {
		kind = "initial"
	}
	o.syncs.Add(ctx, 1, metric.WithAttributes(o.recipeAttrs(ev.Recipe, AttrSyncKind.String(kind))...))
	base := metric.WithAttributes(o.recipeAttrs(ev.Recipe)...)
	o.backlog.Record(ctx, int64(ev.Backlog), base)
	o.cacheNodes.Record(ctx, int64(ev.Nodes), base)
}

// CacheBacklog records a cache's backlog as it crosses a threshold.
func (o *Observer) CacheBacklog(ev zr.CacheBacklogEvent) {
	o.backlog.Record(context.Background(), int64(ev.Backlog), metric.WithAttributes(o.recipeAttrs(ev.Recipe)...))
}

// InstancesSeen records the instances a discovery cache sees (it makes
// Observer a discovery.InstancesObserver).
func (o *Observer) InstancesSeen(ev discovery.InstancesEvent) {
	o.instances.Record(context.Background(), int64(ev.Instances),
		metric.WithAttributes(o.recipeAttrs(ev.Recipe, AttrService.String(ev.Service))...))
}

// ErrorType is the error.type value of an error: a short, low-cardinality
// name (ZooKeeper's error codes, zkrecipes' sentinels, ctx's errors).
func ErrorType(err error) string {
	for _, c := range errorTypes {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other"
}

var errorTypes = []struct {
	err  error
	name string
}{
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
	{zr.ErrLocked, "locked"},
	{zr.ErrRetriesExhausted, "retries_exhausted"},
	{zr.ErrRecipeConflict, "recipe_conflict"},
	{zr.ErrUpgrade, "upgrade"},
	{zr.ErrLeaseExpired, "lease_time"},
	{zr.ErrSuspended, "suspended"},
	{zr.ErrSessionChanged, "session_changed"},
	{zr.ErrNodeDeleted, "node_deleted"},
	{zr.ErrClosed, "closed"},
	{zr.ErrInvalidArgument, "invalid_argument"},
	{zk.ErrNoNode, "no_node"},
	{zk.ErrNodeExists, "node_exists"},
	{zk.ErrBadVersion, "bad_version"},
	{zk.ErrNotEmpty, "not_empty"},
	{zk.ErrNoChildrenForEphemerals, "no_children_for_ephemerals"},
	{zk.ErrSessionExpired, "session_expired"},
	{zr.ErrSessionExpired, "session_expired"},
	{zk.ErrSessionMoved, "session_moved"},
	{zk.ErrConnectionClosed, "connection_loss"},
	{zk.ErrNoServer, "connection_loss"},
	{zk.ErrClosing, "closed"},
	{zk.ErrNoAuth, "no_auth"},
	{zk.ErrAuthFailed, "auth_failed"},
	{zk.ErrAPIError, "api_error"},
}

// recordError records err on span as span.RecordError does (an
// "exception" event with its type and message) and, without
// WithRawPaths, with every path in the message replaced by "<path>":
// first the event's path (which may hold spaces), then any word that
// starts with a slash.
func (o *Observer) recordError(span trace.Span, err error, path string) {
	if o.raw {
		span.RecordError(err)
		return
	}
	if !span.IsRecording() {
		return
	}
	span.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", typeName(err)),
		attribute.String("exception.message", redactPaths(err.Error(), path))))
}

// redactedPath stands for a path taken out of a message.
const redactedPath = "<path>"

// pathWord is a word that starts with a slash, at the start of the text
// or after a space, a quote, a bracket or "=".
var pathWord = regexp.MustCompile(`(^|[\s"'(\[=])/[^\s"']*`)

// redactPaths replaces path, and every word that starts with a slash, in
// msg by "<path>" (punctuation that ends a sentence stays).
func redactPaths(msg, path string) string {
	if len(path) > 1 {
		msg = strings.ReplaceAll(msg, path, redactedPath)
	}
	return pathWord.ReplaceAllStringFunc(msg, func(m string) string {
		lead := ""
		if m[0] != '/' {
			lead, m = m[:1], m[1:]
		}
		trail := strings.TrimRight(m, ":,;.)]")
		return lead + redactedPath + m[len(trail):]
	})
}

// typeName is the exception.type span.RecordError gives err.
func typeName(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}
