package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cluster is a running standalone server or ensemble. Its methods are safe for
// concurrent use. Servers are numbered 0..Size()-1 in the order of [Cluster.Servers].
type Cluster struct {
	backend  string
	members  []member
	dir      string // removed by Close when ownDir
	ownDir   bool
	started  time.Duration
	closeMu  sync.Mutex
	closed   bool
	closeErr error
	tls      *TLSMaterial // WithSecurity(WithTLS(...)); nil otherwise
	tlsAddrs []string     // each member's TLS client address, with tls
	spares   int          // WithReconfig's spares: the last members, not started at the start
	lines    []string     // each member's dynamic configuration line, WithReconfig
}

// Start starts a cluster for the test tb (or attaches to ZK_SERVERS) and registers
// tb.Cleanup to stop it, also when the test fails; when the test failed, the last log
// lines of every server are logged first. Data directories live under tb.TempDir().
// When no backend is available, Start calls tb.Skip with what to install, or
// tb.Fatalf when the environment variable CI is set; any other start failure (bad
// configuration, server that never serves) is tb.Fatalf. Call it from the test
// goroutine only.
func Start(tb testing.TB, opts ...Option) *Cluster {
	tb.Helper()
	cfg := newConfig(opts)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.startTimeout)
	defer cancel()
	c, err := startCluster(ctx, cfg, tb.TempDir(), false)
	if err != nil {
		if isNoBackend(err) && !inCI() {
			tb.Skipf("%v", err)
		}
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for i, m := range c.members {
				if t := m.logTail(40); t != "" {
					tb.Logf("zktest: last log lines of server %d (%s):\n%s", i, m.addr(), t)
				}
			}
		}
		if err := c.Close(); err != nil {
			tb.Errorf("zktest: closing cluster: %v", err)
		}
	})
	return c
}

// StartCluster starts a cluster (or attaches to ZK_SERVERS) for use outside tests,
// with data in a fresh temporary directory that Close removes. It returns once every
// server serves clients, or an error when ctx ends first, when a server exits, or
// when no backend is available (errors.Is(err, ErrNoBackend), with what to install in
// the message). The caller must call [Cluster.Close]. On Linux a Java server also
// dies with the process that started it.
func StartCluster(ctx context.Context, opts ...Option) (*Cluster, error) {
	cfg := newConfig(opts)
	dir, err := os.MkdirTemp("", "zktest-")
	if err != nil {
		return nil, err
	}
	c, err := startCluster(ctx, cfg, dir, true)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func inCI() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return v != "" && v != "0" && v != "false"
}

const startAttempts = 3

func startCluster(ctx context.Context, cfg config, dir string, ownDir bool) (*Cluster, error) {
	t0 := time.Now()
	b, err := selectBackend(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pki, err := cfg.securePKI(dir)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if cfg.reconfig && (b.name() != BackendJava || cfg.size < 2 || pki != nil) {
			return nil, fmt.Errorf("zktest: WithReconfig needs the java backend, an ensemble (WithSize of 2 or more) and no WithSecurity")
		}
		if b.name() == BackendServers && cfg.noExtTypes {
			// A server that refuses TTL nodes is asked for; ZK_SERVERS's
			// may not be one.
			return nil, fmt.Errorf("zktest: WithExtendedTypes(false) needs a server of the test's own (the java or docker backend), not ZK_SERVERS")
		}
		specs, err := planPorts(cfg.size+cfg.spares, pki != nil)
		if err != nil {
			return nil, err
		}
		adir := filepath.Join(dir, fmt.Sprintf("try%d", attempt))
		if err := os.MkdirAll(adir, 0o755); err != nil {
			return nil, err
		}
		ms, err := b.launch(ctx, adir, specs, cfg)
		if err != nil {
			return nil, fmt.Errorf("zktest: %s backend: %w", b.name(), err)
		}
		c := &Cluster{backend: b.name(), members: ms, dir: dir, ownDir: ownDir, tls: pki, spares: cfg.spares}
		if cfg.reconfig {
			for _, s := range specs {
				c.lines = append(c.lines, s.line())
			}
		}
		if pki != nil {
			for _, s := range specs {
				c.tlsAddrs = append(c.tlsAddrs, fmt.Sprintf("127.0.0.1:%d", s.tlsPort))
			}
		}
		err = c.waitAll(ctx)
		if err == nil && pki == nil {
			err = c.checkVersion(ctx, cfg)
		}
		if err == nil {
			c.started = time.Since(t0)
			return c, nil
		}
		var clash bool
		var tails strings.Builder
		for i, m := range ms {
			t := m.logTail(300)
			clash = clash || bindClash(t)
			fmt.Fprintf(&tails, "\n--- server %d (%s), last lines:\n%s", i, m.addr(), tailLines(t, 25))
		}
		_ = c.closeMembers()
		if !clash || attempt == startAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("zktest: %s backend: %w%s", b.name(), err, tails.String())
		}
	}
}

// waitAll waits until every member serves.
func (c *Cluster) waitAll(ctx context.Context) error {
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i := range len(c.members) - c.spares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.WaitServing(ctx, i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ConnectString returns the servers' client addresses joined by commas, the form
// ZooKeeper clients and Curator take.
func (c *Cluster) ConnectString() string { return strings.Join(c.Servers(), ",") }

// Servers returns each server's client address, "127.0.0.1:port", indexed like the
// other methods. The slice is a fresh copy.
func (c *Cluster) Servers() []string {
	s := make([]string, len(c.members))
	for i, m := range c.members {
		s[i] = m.addr()
	}
	return s
}

// Size returns the number of servers, the spares of [WithReconfig] included.
func (c *Cluster) Size() int { return len(c.members) }

// ServerLine returns the line of server i in the dynamic configuration of
// an ensemble started [WithReconfig] ("server.N=127.0.0.1:quorumPort:
// electionPort:participant;127.0.0.1:clientPort", N being i+1): what a
// reconfiguration adds to bring it in. It returns "" without WithReconfig
// or for an i out of range.
func (c *Cluster) ServerLine(i int) string {
	if i < 0 || i >= len(c.lines) {
		return ""
	}
	return c.lines[i]
}

// Backend returns the name of the backend in use: "servers", "java", "docker" or another
// name given to [RegisterBackend].
func (c *Cluster) Backend() string { return c.backend }

// StartDuration returns how long the start took, from backend selection until every
// server served.
func (c *Cluster) StartDuration() time.Duration { return c.started }

func (c *Cluster) member(i int) (member, error) {
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("zktest: server index %d out of range [0,%d)", i, len(c.members))
	}
	return c.members[i], nil
}

// Kill ends server i with SIGKILL (docker: docker kill) and returns once it is gone.
// Its data directory and ports are kept for [Cluster.Restart]. It returns
// [ErrUnsupported] on the "servers" backend and an error if the server is not running.
func (c *Cluster) Kill(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	return m.kill()
}

// RestartTimeout bounds how long [Cluster.Restart] waits for a server to serve.
const RestartTimeout = 60 * time.Second

// Restart kills server i if it still runs, starts it again with the same data
// directory and ports (or for the first time: a spare of [WithReconfig]), and waits (up to [RestartTimeout]) until it serves. In an
// ensemble a server serves only once it has joined a quorum. It returns
// [ErrUnsupported] on the "servers" backend.
func (c *Cluster) Restart(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	if ch := m.exited(); ch != nil {
		select {
		case <-ch:
		default:
			if err := m.kill(); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), RestartTimeout)
	defer cancel()
	if err := m.start(ctx); err != nil {
		return err
	}
	return c.WaitServing(ctx, i)
}

// Stop freezes server i with SIGSTOP (docker: docker pause): its sockets stay open but
// it answers nothing, like a stalled machine. Undo with [Cluster.Cont]; Close also
// ends a stopped server. It returns [ErrUnsupported] on the "servers" backend.
func (c *Cluster) Stop(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	return m.stop()
}

// Cont resumes server i after [Cluster.Stop] with SIGCONT (docker: docker unpause).
// It does not wait for the server to serve again; use [Cluster.WaitServing].
func (c *Cluster) Cont(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	return m.cont()
}

// WaitServing waits until server i answers "srvr" with a Mode line, which is when it
// serves clients (an open port is not enough). It returns ctx's error wrapped with the
// last probe error when ctx ends first, and fails at once when the server's process
// has exited.
func (c *Cluster) WaitServing(ctx context.Context, i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := Srvr(ctx, m.addr())
		if err == nil && c.tlsAddrs != nil {
			err = probeTLSPort(ctx, c.tlsAddrs[i])
		}
		if err == nil {
			return nil
		}
		exited := m.exited()
		select {
		case <-ctx.Done():
			return fmt.Errorf("zktest: server %d (%s) not serving: %w (last probe: %v)", i, m.addr(), ctx.Err(), err)
		case <-exited:
			return fmt.Errorf("zktest: server %d (%s) exited before serving", i, m.addr())
		case <-tick.C:
		}
	}
}

// Srvr returns server i's "srvr" reply as a map; see [Srvr].
func (c *Cluster) Srvr(i int) (map[string]string, error) {
	m, err := c.member(i)
	if err != nil {
		return nil, err
	}
	return Srvr(context.Background(), m.addr())
}

// Mntr returns server i's "mntr" reply as a map; see [Mntr].
func (c *Cluster) Mntr(i int) (map[string]string, error) {
	m, err := c.member(i)
	if err != nil {
		return nil, err
	}
	return Mntr(context.Background(), m.addr())
}

// Leader asks every server for its Mode (in parallel, each bounded by 1s) and returns
// the index of the one that reports "leader" or "standalone". It returns
// [ErrNoLeader] when none does, e.g. during an election.
func (c *Cluster) Leader() (int, error) {
	modes := make([]string, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if s, err := Srvr(ctx, m.addr()); err == nil {
				modes[i] = s["Mode"]
			}
		}()
	}
	wg.Wait()
	for i, mode := range modes {
		if mode == "leader" || mode == "standalone" {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%w (modes %q)", ErrNoLeader, modes)
}

// WaitLeader polls [Cluster.Leader] until a leader is found or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		i, err := c.Leader()
		if err == nil {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Close stops every server (SIGKILL: a test harness needs no graceful shutdown),
// waits for them to be gone and removes the data directory created by StartCluster.
// It is idempotent and returns the first error of the first call.
func (c *Cluster) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return c.closeErr
	}
	c.closed = true
	c.closeErr = c.closeMembers()
	if c.ownDir {
		if err := os.RemoveAll(c.dir); err != nil && c.closeErr == nil {
			c.closeErr = err
		}
	}
	return c.closeErr
}

func (c *Cluster) closeMembers() error {
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// checkVersion fails when a server is not of the ZooKeeper version asked for
// (WithServerVersion): a test meant for that version must not pass on another.
func (c *Cluster) checkVersion(ctx context.Context, cfg config) error {
	v, err := cfg.serverVersion()
	if err != nil || cfg.version == "" {
		return err
	}
	for _, addr := range c.Servers()[:len(c.members)-c.spares] {
		m, err := Srvr(ctx, addr)
		if err != nil {
			return fmt.Errorf("zktest: asking %s its version: %w", addr, err)
		}
		if got := m["Zookeeper version"]; !strings.HasPrefix(got, v+".") {
			return fmt.Errorf("zktest: server %s runs ZooKeeper %q, not %s", addr, got, v)
		}
	}
	return nil
}
