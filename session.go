package zkrecipes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Session owns one connection to a ZooKeeper ensemble and tracks its
// liveness for every recipe built on it: it reports the connection's state
// as Curator does (SUSPENDED, RECONNECTED, LOST) and tells each lease when
// its ownership ends.
//
// A Session outlives the ZooKeeper sessions under it: after one expires the
// client connects again under a new session id, the Session reports LOST
// then RECONNECTED, and recipes acquire again on the new one. Every lease
// granted under the old session has ended by then.
//
// A Session is safe for concurrent use. Close it when done: Close ends
// every lease and stops every goroutine the Session and its recipes
// started.
//
// # How a recipe starts and stops
//
// Everything a Session runs in the background (PersistentNode,
// PersistentTtlNode, GroupMember, NodeCache, TreeCache, PersistentWatch,
// package discovery's caches) has Start(ctx) and Close(ctx). Start begins
// the work and waits within ctx until it is first ready (the node in
// place, the cache loaded, the watch set) or refused in a way no retry
// mends; ctx bounds that wait only, never the recipe's life. A Start that
// returns an error has stopped what it began (Close is then a no-op that
// returns nil); a second Start fails with ErrNodeStarted or
// ErrCacheStarted. Close stops the work and waits within ctx for its own
// clean-up (deleting its nodes, removing its watch) and its goroutines; it
// is idempotent and safe to call concurrently. The Session is the root, as
// database/sql's DB is: its Close takes no ctx (see Close for what bounds
// it).
//
// # How a recipe tells you
//
// Two idioms, one rule. A stream whose every item matters is a channel:
// Events() <-chan T, owned by the recipe and closed when it is closed (the
// caches, PersistentWatch); or, for an object many listen to,
// Subscribe(ctx), whose channel is closed when ctx ends or the object ends
// (the Session's states, an Election's leader changes). A state whose
// latest value is what matters is Status-shaped: a call that returns the
// value now and a channel closed at its next change (PersistentNode.Status,
// GroupMember.Members); read it again when the channel closes. Neither is
// a read loop: WatchData, WatchChildren and SharedValue's and
// SharedCount's Watch read on the caller's goroutine, calling fn with each
// value, until ctx ends; they run nothing in the background.
type Session struct {
	conn     *zk.Conn
	ownsConn bool
	cfg      sessionConfig
	wire     *wire.Layer // Connect's connections (nil: NewSession, or WithWireLayer(false); see internal/wire)
	servers  *serverList // Connect's servers (nil: NewSession; see servers.go)
	owned    sync.Map    // path -> ZooKeeper session id: ephemeral nodes this Session created and has not deleted
	drops    sync.Map    // path -> struct{}: paths created only to be watched, deleted on Close if still unused
	held     heldNodes   // the nodes its leases hold, watched through the event callback (holdwatch.go)

	pendingDeletes sync.Map // *struct{path} -> path: guaranteed deletes going on in the background (node.go)

	deferredMu sync.Mutex
	deferred   map[string][]*deferredDelete // path -> its deletes of nodes given up on (cleanup.go)
	claims     map[string]int               // path -> the keepers holding it (claim)
	direct     bool                         // events come from the client's callback (Connect), not a channel (NewSession)

	// event queue: the client's callback appends, one goroutine drains.
	qmu   sync.Mutex
	queue []zk.Event
	wake  chan struct{}

	notes notifyRoutes // node notifications for the caches (see notify.go)

	mu        sync.Mutex
	state     ConnState
	gen       *generation // the current (or last) ZooKeeper session
	epoch     *signal     // ends when ownership ends under the loss policy
	ready     chan struct{}
	suspendT  *time.Timer
	subs      map[*subscriber]struct{}
	observed  []StateChange // state changes the Observer is yet to be told (unlockReport)
	reportMu  sync.Mutex    // one goroutine at a time reports them, in order
	closed    bool
	closedCh  chan struct{}
	opsMu     sync.RWMutex // Close takes it to stop new operations
	wg        sync.WaitGroup
	workers   workers
	closeOnce sync.Once
	fatal     *signal // a failure redialling cannot mend (secure.go)
	damp      *damper // WithFlapDamping (flapdamping.go); nil: off
}

// generation is one ZooKeeper session seen by this Session.
type generation struct {
	id int64
	*signal
}

// Connect dials the ensemble (a list of "host:port"; a missing port is
// 2181), waits until a ZooKeeper session is established, and returns a
// Session that owns the connection. Servers are tried one at a time, in an
// order shuffled once, as the Java client does; each name is resolved again
// at each attempt and reaches WithTLS and WithSASL as written (see
// WithResolver), so a name that does not resolve is skipped, not fatal.
// Connect succeeds as soon as any server accepts the Session. If none has
// when ctx ends, it fails with a *ConnectError that gives each server's
// reason and matches ErrNoServerAccepted and ctx's error; it fails the same
// way before then once every server has refused the Session for a reason
// redialling cannot mend (see WithTLS and WithSASL), at its handshake or at
// its first request. It fails with
// ErrInvalidArgument for a server that is not host:port, and with
// ErrInvalidArgument or ErrInvalidPath for bad options.
//
// Once connected, the Session follows the ensemble's configuration
// (ZooKeeper 3.5's /zookeeper/config, as Curator does): after a
// reconfiguration it dials the new members, and moves off a server that
// left, keeping its ZooKeeper session (see WithEnsembleTracking, on by
// default, and Servers).
//
// A Session holds about 3 MB of go-zookeeper's buffers (a 1.5 MB send
// buffer, and a 1.5 MB receive buffer for each connection), whatever its
// traffic: one Session serves every recipe of a process, so open one per
// process rather than one per lock.
func Connect(ctx context.Context, servers []string, opts ...SessionOption) (*Session, error) {
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	servers, err = normalizeServers(servers)
	if err != nil {
		return nil, err
	}
	s := newSession(cfg)
	s.ownsConn = true
	s.direct = true // zk.WithEventCallback below
	s.servers = newServerList(servers, cfg.log, s.closedCh)
	// The dialer stack, from go-zookeeper down: each server reaches TLS
	// and SASL by name, as written; it is resolved at the bottom, at each
	// connection attempt (servers.go).
	dial := s.servers.dialer(cfg.resolver, cfg.dialer)
	dial = s.secureDialer(dial) // WithTLS, WithSASL (secure.go)
	if !cfg.noWire && wireFits(cfg.log) {
		s.wire = wire.New()
		s.wire.OnResumeFallback = func(waited time.Duration) {
			s.cfg.log.Warn("zkrecipes: go-zookeeper had not re-set its watches on a resumed connection by its read deadline; replies were let through before it (no change goes unreported: a sign of a starved process)",
				"waited", waited)
		}
		dial = s.wire.Dialer(dial)
	}
	dial = s.servers.recorder(dial)
	conn, _, err := zk.Connect(servers, cfg.timeout, zk.WithEventCallback(s.onEvent),
		zk.WithLogger(zkLogger{cfg.log}), zk.WithLogInfo(false),
		zk.WithHostProvider(s.servers), zk.WithDialer(zk.Dialer(dial)))
	if err != nil {
		return nil, fmt.Errorf("zkrecipes: connect: %w", err)
	}
	s.conn = conn
	s.start()
	s.stopOnFatal()
	if err := s.awaitFirst(ctx); err != nil {
		var ce *ConnectError
		if !errors.As(err, &ce) { // ctx's: every server refusing is a *ConnectError already
			err = s.servers.connectError(err)
		}
		s.Close()
		return nil, err
	}
	if err := s.authenticate(); err != nil {
		s.Close()
		return nil, err
	}
	s.trackEnsemble(ctx) // WithEnsembleTracking (ensembletrack.go)
	if s.fatal.fired() {
		// Its first request was refused by every server (a server that
		// requires SASL answers any request so): no Session to return.
		err := s.fatal.err
		s.Close()
		return nil, err
	}
	return s, nil
}

// NewSession adopts a *zk.Conn the caller already made, with the event
// channel zk.Connect returned, which the Session then drains: adopt it right
// after zk.Connect, before more than 6 events queue up and the client drops
// them. It waits, like Connect, until the connection has a session, and
// adds the WithDigestAuth credentials. The caller keeps ownership of conn:
// Close deletes the nodes the Session still owns (its leases end) and stops
// the Session's goroutines, but leaves conn open. Pass the
// session timeout conn was made with in WithSessionTimeout: an adopted
// connection cannot tell the Session what the server granted. Nor does it
// get what Connect's connections do on the wire: a waiter's requests are
// written one by one, and after a reconnection go-zookeeper may read a
// reply before it re-sets its watches, which can lose a notification of a
// change made while it was cut off (go-zookeeper/zk#35).
// Prefer Connect. Given an option only Connect honours (WithTLS, WithSASL,
// WithDialer, WithWireLayer, WithResolver, WithEnsembleTracking(true)),
// NewSession fails with an error matching ErrConnectOnlyOption and
// ErrInvalidArgument, before adopting conn. Its Session does not follow
// the ensemble's configuration: conn keeps the servers it was made with.
func NewSession(ctx context.Context, conn *zk.Conn, events <-chan zk.Event, opts ...SessionOption) (*Session, error) {
	if ctx == nil {
		return nil, invalidArg("nil context")
	}
	if conn == nil || events == nil {
		return nil, invalidArg("nil conn or event channel")
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(cfg.connOnly) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrConnectOnlyOption, strings.Join(cfg.connOnly, ", "))
	}
	s := newSession(cfg)
	s.conn = conn
	if conn.State() == zk.StateHasSession {
		s.enqueue(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				s.onEvent(ev)
			case <-s.closedCh:
				return
			}
		}
	}()
	s.start()
	if err := s.awaitFirst(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("zkrecipes: adopt connection: %w", err)
	}
	if err := s.authenticate(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func buildConfig(opts []SessionOption) (sessionConfig, error) {
	cfg := defaultSessionConfig()
	for _, o := range opts {
		if o == nil {
			return cfg, invalidArg("nil SessionOption")
		}
		o(&cfg)
	}
	if cfg.err == nil {
		cfg.err = checkConfigSizes(cfg)
	}
	if cfg.tracer != nil {
		cfg.obs = tracerObserver(cfg.obs, cfg.tracer)
	}
	return cfg, cfg.err
}

func newSession(cfg sessionConfig) *Session {
	s := &Session{
		cfg:      cfg,
		wake:     make(chan struct{}, 1),
		state:    StateConnecting,
		gen:      &generation{signal: newSignal()},
		epoch:    newSignal(),
		ready:    make(chan struct{}),
		subs:     map[*subscriber]struct{}{},
		closedCh: make(chan struct{}),
		fatal:    newSignal(),
		workers:  workers{tasks: make(chan func())},
	}
	if cfg.damping != nil {
		s.damp = newDamper(cfg.damping, cfg.log)
	}
	return s
}

func (s *Session) start() {
	s.wg.Add(1)
	go s.drain()
}

func (s *Session) authenticate() error {
	for _, a := range s.cfg.auth {
		if err := s.conn.AddAuth("digest", []byte(a)); err != nil {
			return fmt.Errorf("zkrecipes: digest auth: %w", err)
		}
	}
	return nil
}

// awaitFirst waits for the first session. It returns nil, the error that
// ended connecting for good (see failFatal), or ctx's error.
func (s *Session) awaitFirst(ctx context.Context) error {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-s.fatal.done:
		return s.fatal.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Namespace returns the absolute namespace prefix ("" for none).
func (s *Session) Namespace() string { return s.cfg.namespace }

// Conn returns the underlying go-zookeeper connection, for operations this
// package does not offer (watches of one's own, reconfiguration). Its
// requests bypass the Session: no namespace, size check, typed errors,
// retry, Tracer or Observer; prefer the Session's node operations (Create,
// Get, Set, Delete, Multi...). Do not close it; close the Session.
func (s *Session) Conn() *zk.Conn { return s.conn }

// Close ends the Session: it closes the connection if Connect made it (so
// the server deletes every ephemeral node of the session at once), ends
// every lease with ErrClosed, and waits for every goroutine the Session and
// its recipes started. Calls on the Session after Close return ErrClosed.
// It returns nil, or, when guaranteed deletes (Delete WithGuaranteed) were
// still pending, an error matching ErrDeletePending that names their
// nodes. Close is idempotent; later calls return nil.
//
// Close takes no ctx: it is the root of everything the Session runs, as
// database/sql's DB.Close is. What bounds it, on a Session from Connect:
// it sends no request; it closes the connection, which ends every request
// in flight, and waits for the goroutines that then return. On a Session
// from NewSession, whose connection it leaves open, it deletes the
// ephemeral nodes it owns, one request each, waiting for each reply (a
// connection cut off holds it until go-zookeeper gives the connection up,
// within the session timeout). Close each recipe first, with a ctx, to have its
// nodes deleted and its watches removed within a bound of yours.
func (s *Session) Close() error {
	var pending error
	s.closeOnce.Do(func() {
		s.opsMu.Lock() // no new operation starts from here on
		s.mu.Lock()
		s.closed = true
		err := lost(ErrClosed)
		s.epoch.fire(err)
		s.gen.fire(err)
		s.stopSuspendTimer()
		s.setState(StateClosed, s.gen.id, ErrClosed)
		for sub := range s.subs {
			sub.cancel()
		}
		s.subs = nil
		close(s.closedCh)
		s.mu.Unlock()
		s.opsMu.Unlock()
		s.reportStates() // StateClosed, outside the locks: the Observer may read the Session
		s.dropUnused()
		if s.ownsConn {
			s.conn.Close() // the session ends, and every ephemeral node with it
		} else {
			s.deleteOwned() // the caller's connection, and its session, live on
		}
		s.wg.Wait()
		pending = s.pendingDeletesErr()
	})
	return pending
}

// own registers an ephemeral node this Session created, with the
// ZooKeeper session it belongs to. If Close has already run, a node on an
// adopted connection is deleted at once.
func (s *Session) own(path string) {
	s.opsMu.RLock()
	closed := s.isClosed()
	if !closed {
		s.owned.Store(path, s.conn.SessionID())
	}
	s.opsMu.RUnlock()
	if closed && !s.ownsConn {
		_ = s.conn.Delete(path, -1)
	}
}

// disown forgets a node once it is deleted.
func (s *Session) disown(path string) { s.owned.Delete(path) }

// dropOnClose registers a path the Session created only to watch it (an
// election path an observer made): Close deletes it if nobody ever used
// it, since ZooKeeper never reaps a container that never had children.
// If Close has already run, it deletes the path at once.
func (s *Session) dropOnClose(path string) {
	s.opsMu.RLock()
	closed := s.isClosed()
	if !closed {
		s.drops.Store(path, struct{}{})
	}
	s.opsMu.RUnlock()
	if closed {
		s.dropIfUnused(path)
	}
}

// keep forgets a path registered with dropOnClose.
func (s *Session) keep(path string) { s.drops.Delete(path) }

// dropUnused deletes, on Close, every registered path that never had a
// child (a conditional delete: a path in use stays).
func (s *Session) dropUnused() {
	s.drops.Range(func(k, _ any) bool {
		s.dropIfUnused(k.(string))
		s.drops.Delete(k)
		return true
	})
}

func (s *Session) dropIfUnused(p string) {
	if r, err := traced(s, "getData", p, s.getReq(p, false)); err == nil && neverUsed(r.stat) {
		_ = s.conn.Delete(p, r.stat.Version)
	}
}

// neverUsed reports whether a node never had a child: no child now, and
// its children never changed.
func neverUsed(st *zk.Stat) bool { return st.NumChildren == 0 && st.Cversion == 0 }

// deleteOwned deletes, on Close of an adopted connection, every node the
// Session still owns: its session lives on with the caller's connection,
// and would keep them (and the locks they are) otherwise.
func (s *Session) deleteOwned() {
	s.owned.Range(func(k, sid any) bool {
		// A node of an earlier session went with it: one on its path now
		// is someone else's.
		if sid.(int64) != s.conn.SessionID() {
			s.owned.Delete(k)
			return true
		}
		if err := s.conn.Delete(k.(string), -1); err != nil && err != zk.ErrNoNode {
			s.cfg.log.Warn("zkrecipes: close: node not deleted; it stays until the connection's session ends", "path", k, "err", err)
		}
		s.owned.Delete(k)
		return true
	})
}

// readBuildInfo is debug.ReadBuildInfo; a test replaces it.
var readBuildInfo = debug.ReadBuildInfo

// wireFits reports whether the wire layer may run over the go-zookeeper
// this binary was built with (see wire.Fits). When it may not, it warns on
// log: Connect then runs without the layer, as with WithWireLayer(false).
func wireFits(log *slog.Logger) bool {
	bi, _ := readBuildInfo() // nil when not ok, which Fits takes as "cannot tell"
	fits, found := wire.Fits(bi)
	if !fits {
		log.Warn("zkrecipes: this binary's go-zookeeper is not one the wire layer was tested with; running without it, as with WithWireLayer(false)",
			"found", found, "tested", wire.TestedVersions())
	}
	return fits
}

// zkLogger routes go-zookeeper's messages to slog at Debug level.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug("zk: " + fmt.Sprintf(format, args...))
}

// abs maps a recipe path to its absolute ZooKeeper path.
func (s *Session) abs(p string) string {
	if p == ConfigPath { // the ensemble's own node, whatever the namespace
		return p
	}
	return s.cfg.namespace + p
}

// rel maps an absolute ZooKeeper path back under the namespace.
func (s *Session) rel(p string) string {
	if s.cfg.namespace == "" {
		return p
	}
	return strings.TrimPrefix(p, s.cfg.namespace)
}

// grantedTimeout returns the session timeout the server granted, or the
// one asked for when the Session cannot tell (NewSession, the wire layer
// off) or before any server answered.
func (s *Session) grantedTimeout() time.Duration {
	if d := s.wire.Granted(); d > 0 {
		return d
	}
	return s.cfg.timeout
}

// gather asks the Session's current connection to write the next n request
// frames together. Without the wire layer, it does nothing.
func (s *Session) gather(n int) { s.wire.Gather(n) }
