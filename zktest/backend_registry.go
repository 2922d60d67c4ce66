package zktest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// A Backend starts servers in a way this package does not build in: the Docker backend
// of package github.com/zkrecipes/zkrecipes/zktest/docker (a module of its own, so that
// a test that wants no Docker never downloads testcontainers) is one. It is made
// available by [RegisterBackend]; tests use it through [WithBackend] or
// ZK_TEST_BACKEND, like the built-in backends.
type Backend interface {
	// Launch creates and starts one server per entry of p.Servers, in that order, and
	// returns them in the same order. It need not wait until they serve: the harness
	// does. On error it releases whatever it started. Every server listens on
	// 127.0.0.1 only, at the ports p.Servers gives.
	Launch(ctx context.Context, p LaunchPlan) ([]BackendServer, error)
}

// LaunchPlan is what a [Backend] is asked to start: an ensemble of len(Servers)
// members (a standalone server when there is one).
type LaunchPlan struct {
	// Dir is a fresh directory of this launch for the backend's files.
	Dir string
	// Servers are the members, in order.
	Servers []ServerPlan
	// JVMFlags are the flags [WithJVMFlags] gave, nil when it was not used (then the
	// backend's own defaults apply; an empty, non-nil slice asks for the JVM's defaults).
	JVMFlags []string
	// LogWriter receives every server's log output when [WithLogWriter] gave one; nil
	// otherwise. It is safe for concurrent use.
	LogWriter io.Writer
}

// ServerPlan is one member of a [LaunchPlan].
type ServerPlan struct {
	// ID is the member's myid, from 1.
	ID int
	// ClientPort is its client port on 127.0.0.1, chosen free by the operating system.
	ClientPort int

	specs []serverSpec
	self  int
	cfg   config
}

// Addr returns the member's client address, 127.0.0.1:ClientPort.
func (p ServerPlan) Addr() string { return fmt.Sprintf("127.0.0.1:%d", p.ClientPort) }

// ZooCfg returns the member's zoo.cfg, with dataDir (as the server process sees it)
// as its data directory: the tick time, the session bounds, the ensemble's peer and
// election ports on 127.0.0.1 and the extended types the options asked for. The
// backend writes ID, followed by a newline, to dataDir/myid.
func (p ServerPlan) ZooCfg(dataDir string) string {
	if len(p.specs) == 0 {
		return ""
	}
	return zooCfg(p.specs, p.self, dataDir, p.cfg.tickTime) + p.cfg.extendedTypesCfg()
}

// BackendServer is one server a [Backend] started. Its methods are safe for concurrent
// use. A method a backend cannot perform returns [ErrUnsupported]. ctx bounds each call
// that waits; the harness gives a ctx with a deadline ([Cluster]'s methods take none), and
// a call that cannot finish by then returns an error.
type BackendServer interface {
	// Start starts the server again after Kill, with the same data and ports. It need
	// not wait until the server serves.
	Start(ctx context.Context) error
	// Kill ends the server at once (SIGKILL or its like) and returns once it is gone.
	Kill(ctx context.Context) error
	// Stop freezes the server: its sockets stay open, it answers nothing.
	Stop(ctx context.Context) error
	// Cont resumes a server Stop froze.
	Cont(ctx context.Context) error
	// Exited returns a channel closed when the current process has ended, or nil when
	// the backend cannot tell.
	Exited() <-chan struct{}
	// LogTail returns up to n of the last lines of the server's log, "" when there is
	// none to read.
	LogTail(ctx context.Context, n int) string
	// Close ends the server for good (a frozen one too) and releases what it holds; a
	// second call does nothing.
	Close(ctx context.Context) error
}

// OpenBackend makes a [Backend] ready for one cluster, or returns an error wrapping
// [ErrNoBackend], saying what to install, when it cannot run on this machine.
type OpenBackend func(ctx context.Context) (Backend, error)

var registry struct {
	mu    sync.Mutex
	names []string // registration order: automatic selection tries them in it
	open  map[string]OpenBackend
}

// RegisterBackend makes a backend available under name to [WithBackend],
// ZK_TEST_BACKEND and automatic selection, which tries registered backends after
// "servers" and "java", in the order they were registered. It is meant for a
// package's init function: importing github.com/zkrecipes/zkrecipes/zktest/docker
// registers [BackendDocker]. Names are case-insensitive. It returns an error wrapping
// [ErrBackendName], and registers nothing, when name is empty, is "auto", "servers" or
// "java", or is registered already, or when open is nil.
func RegisterBackend(name string, open OpenBackend) error {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" || n == "auto" || n == BackendServers || n == BackendJava || open == nil {
		return fmt.Errorf("%w: RegisterBackend(%q): the name is empty or the harness's own, or open is nil", ErrBackendName, name)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.open[n]; dup {
		return fmt.Errorf("%w: RegisterBackend(%q): registered already", ErrBackendName, name)
	}
	if registry.open == nil {
		registry.open = map[string]OpenBackend{}
	}
	registry.names = append(registry.names, n)
	registry.open[n] = open
	return nil
}

// registered returns the backend registered as name, or false.
func registered(name string) (OpenBackend, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	o, ok := registry.open[name]
	return o, ok
}

// registeredNames returns the registered names in registration order.
func registeredNames() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return slices.Clone(registry.names)
}

// openRegistered opens the registered backend name as a backend of the harness.
func openRegistered(ctx context.Context, name string, open OpenBackend) (backend, error) {
	b, err := open(ctx)
	if err != nil {
		return nil, err
	}
	return &registeredBackend{n: name, b: b}, nil
}

// registeredBackend adapts a registered Backend to the harness's backend.
type registeredBackend struct {
	n string
	b Backend
}

func (r *registeredBackend) name() string { return r.n }

func (r *registeredBackend) launch(ctx context.Context, dir string, specs []serverSpec, cfg config) ([]member, error) {
	p := LaunchPlan{Dir: dir, JVMFlags: slices.Clone(cfg.jvmFlags), LogWriter: cfg.logWriter}
	for i, s := range specs {
		p.Servers = append(p.Servers, ServerPlan{ID: s.id, ClientPort: s.clientPort, specs: specs, self: i, cfg: cfg})
	}
	srvs, err := r.b.Launch(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(srvs) != len(specs) {
		for _, s := range srvs {
			if s != nil {
				_ = call(s.Close)
			}
		}
		// StartCluster prefixes "zktest: <name> backend: ".
		return nil, fmt.Errorf("it started %d servers for %d", len(srvs), len(specs))
	}
	ms := make([]member, len(srvs))
	for i, s := range srvs {
		ms[i] = registeredServer{address: specs[i].addr(), s: s}
	}
	return ms, nil
}

// serverCallTimeout bounds a BackendServer call made for a Cluster method, which takes
// no ctx: closing one (a container's removal) may take long on a busy machine.
const serverCallTimeout = 2 * time.Minute

// registeredServer adapts a BackendServer to the harness's member.
type registeredServer struct {
	address string
	s       BackendServer
}

// call runs f with a ctx bounded by serverCallTimeout.
func call[T any](f func(context.Context) T) T {
	ctx, cancel := context.WithTimeout(context.Background(), serverCallTimeout)
	defer cancel()
	return f(ctx)
}

func (m registeredServer) addr() string                    { return m.address }
func (m registeredServer) start(ctx context.Context) error { return m.s.Start(ctx) }
func (m registeredServer) kill() error                     { return call(m.s.Kill) }
func (m registeredServer) stop() error                     { return call(m.s.Stop) }
func (m registeredServer) cont() error                     { return call(m.s.Cont) }
func (m registeredServer) exited() <-chan struct{}         { return m.s.Exited() }
func (m registeredServer) close() error                    { return call(m.s.Close) }
func (m registeredServer) logTail(n int) string {
	return call(func(ctx context.Context) string { return m.s.LogTail(ctx, n) })
}
