// Package peers runs foreign ZooKeeper lock clients — Apache Curator, kazoo and
// go-zookeeper's own zk.Lock — as separate processes for the interoperability
// tests, and checks their shared log from the outside.
//
// Every peer takes the same flags (see README.md), appends "ENTER <id> <token>
// <unix-nanos>" / "EXIT <id> <unix-nanos>" style lines to a shared log with one
// O_APPEND write per line, and prints one JSON summary line on stdout. CheckLog
// then verifies mutual exclusion across all processes.
//
// Start runs a peer with Pdeathsig SIGKILL, so no peer outlives the test binary
// (Linux only), and kills it in t.Cleanup.
package peers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// The kinds of peer Start runs.
const (
	// Curator is Apache Curator 5.4 (Java): InterProcessMutex, InterProcessReadWriteLock,
	// InterProcessSemaphoreV2, LeaderLatch, LeaderSelector.
	Curator = "curator"
	// Kazoo is Python kazoo 2.8: Lock, ReadLock, WriteLock.
	Kazoo = "kazoo"
	// Gozk is go-zookeeper v1.0.4's own zk.NewLock.
	Gozk = "gozk"
	// Zkrecipes is this project's Mutex, run as a separate process (the gozk
	// program with --impl zkrecipes).
	Zkrecipes = "zkrecipes"
)

// Kinds lists every kind of peer.
var Kinds = []string{Curator, Kazoo, Gozk, Zkrecipes}

// Available reports what is missing to run a peer of the given kind, or nil.
// Tests should skip on an error locally but fail when the environment variable
// CI is set; Start does exactly that.
func Available(kind string) error {
	switch kind {
	case Curator:
		var missing []string
		for _, tool := range []string{"java", "javac"} {
			if _, err := exec.LookPath(tool); err != nil {
				missing = append(missing, tool+" (apt-get install openjdk-17-jdk-headless)")
			}
		}
		for _, j := range curatorJars {
			p := filepath.Join(javaLibDir(), j)
			if _, err := os.Stat(p); err != nil {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("curator peer: missing %s (Debian: libcurator-recipes-java libcurator-discovery-java libzookeeper-java libslf4j-java; or set ZKRECIPES_JAVA_LIB)", strings.Join(missing, ", "))
		}
		return nil
	case Kazoo:
		py := pythonPath()
		out, err := exec.Command(py, "-c", "import kazoo.client, kazoo.recipe.lock").CombinedOutput()
		if err != nil {
			return fmt.Errorf("kazoo peer: %s cannot import kazoo (Debian: apt-get install python3-kazoo; or set ZKRECIPES_PYTHON): %v %s", py, err, bytes.TrimSpace(out))
		}
		return nil
	case Gozk, Zkrecipes:
		if _, err := exec.LookPath("go"); err != nil {
			return errors.New("gozk peer: the go tool is not on PATH")
		}
		if _, err := packageDir(); err != nil {
			return fmt.Errorf("gozk peer: %v", err)
		}
		return nil
	default:
		return fmt.Errorf("peers: unknown kind %q (want one of %v)", kind, Kinds)
	}
}

// Summary is a peer's JSON summary line.
type Summary struct {
	Peer         string `json:"peer"`
	Mode         string `json:"mode"`
	ID           string `json:"id"`
	Acquisitions int    `json:"acquisitions"`
	Errors       int    `json:"errors"`
	// Samples is the number of latencies behind the percentiles.
	Samples int `json:"samples"`
	// P50Micros, P99Micros and MaxMicros are percentiles of the acquire wait
	// (mutex, read, write, semaphore, latch, bench-contended), of a whole
	// acquire+release cycle (bench-uncontended), or of the leadership time (selector).
	P50Micros int64 `json:"p50_us"`
	P99Micros int64 `json:"p99_us"`
	MaxMicros int64 `json:"max_us"`
	// Cycles is the number of bench-uncontended cycles.
	Cycles int `json:"cycles"`
	// Raw holds every field of the line, for fields added later.
	Raw map[string]any `json:"-"`
}

// Process is a running peer.
type Process struct {
	// Kind is the peer kind, Args its command-line arguments.
	Kind string
	Args []string

	cmd    *exec.Cmd
	stdin  io.WriteCloser // Launch only
	stdout zktest.LogBuffer
	stderr zktest.LogBuffer
	done   chan struct{}
	err    error // of cmd.Wait, set before done closes
}

// Start starts a peer of the given kind with args (the subcommand first, e.g.
// "mutex", "--servers", s, "--path", "/p", "--id", "c1"). It skips the test when
// the peer is not available (fails instead when env CI is set), fails it when a
// --servers address is outside 127.0.0.0/8 or the peer cannot start, and kills
// the peer in tb.Cleanup. Call it from the test goroutine.
func Start(tb testing.TB, kind string, args ...string) *Process {
	tb.Helper()
	return start(tb, kind, args, false)
}

// StartSynced is Start for a synchronised bench mode (--sync, bench-drain):
// the peer has a pipe on its standard input, for Send and CloseStdin.
func StartSynced(tb testing.TB, kind string, args ...string) *Process {
	tb.Helper()
	return start(tb, kind, args, true)
}

// Require skips tb when the peer kind cannot run here (its runtime or
// jars are missing), and fails it instead under CI, where a missing peer
// is a broken set-up, not a reason to skip.
func Require(tb testing.TB, kind string) {
	tb.Helper()
	if err := Available(kind); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("peer %s unavailable on CI: %v", kind, err)
		}
		tb.Skipf("peer %s unavailable: %v", kind, err)
	}
}

func start(tb testing.TB, kind string, args []string, withStdin bool) *Process {
	tb.Helper()
	Require(tb, kind)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := launch(ctx, kind, args, withStdin)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Kill()
		if tb.Failed() {
			tb.Logf("peer %s %s: stderr:\n%s", kind, strings.Join(args, " "), tail(p.Stderr(), 4000))
		}
	})
	return p
}

// Launch starts a peer outside a test, for programs such as the benchmark
// runner, with a pipe on its standard input (see Send and CloseStdin). It
// fails when the peer is not available, a --servers address is outside
// 127.0.0.0/8, or the peer cannot be built (bounded by ctx) or started. The
// caller must Kill the peer or Wait for it.
func Launch(ctx context.Context, kind string, args ...string) (*Process, error) {
	if err := Available(kind); err != nil {
		return nil, err
	}
	return launch(ctx, kind, args, true)
}

func launch(ctx context.Context, kind string, args []string, withStdin bool) (*Process, error) {
	if err := checkLoopback(args); err != nil {
		return nil, err
	}
	name, argv, err := command(ctx, kind, args)
	if err != nil {
		return nil, fmt.Errorf("peer %s: %v", kind, err)
	}
	p := &Process{Kind: kind, Args: args, done: make(chan struct{})}
	p.cmd = exec.Command(name, argv...)
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // Kill takes the whole group
		Pdeathsig: syscall.SIGKILL, // and the kernel kills the peer if its parent dies
	}
	if withStdin {
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			return nil, fmt.Errorf("peer %s: stdin: %v", kind, err)
		}
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("peer %s: start: %v", kind, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Send writes line and a newline to the standard input of a peer started by
// Launch. The synchronised bench modes (--sync, bench-drain) start their
// measured phase on the first line.
func (p *Process) Send(line string) error {
	if p.stdin == nil {
		return errors.New("peers: Send on a peer without a stdin pipe (use Launch)")
	}
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// CloseStdin closes the standard input of a peer started by Launch; the
// synchronised bench modes then close their sessions and exit.
func (p *Process) CloseStdin() error {
	if p.stdin == nil {
		return nil
	}
	return p.stdin.Close()
}

// WaitLine waits until the peer has printed a line starting with prefix and
// returns it. It fails when ctx ends or the peer exits first.
func (p *Process) WaitLine(ctx context.Context, prefix string) (string, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, l := range strings.Split(p.Stdout(), "\n") {
			if strings.HasPrefix(l, prefix) {
				return l, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("peer %s %s: no %q line: %w; stderr: %s", p.Kind, p.Args[0], prefix, ctx.Err(), tail(p.Stderr(), 2000))
		case <-p.done:
			for _, l := range strings.Split(p.Stdout(), "\n") {
				if strings.HasPrefix(l, prefix) {
					return l, nil
				}
			}
			return "", fmt.Errorf("peer %s %s exited (%v) before printing %q; stderr: %s", p.Kind, p.Args[0], p.err, prefix, tail(p.Stderr(), 2000))
		case <-tick.C:
		}
	}
}

// command returns the program and arguments that run a peer of kind.
func command(ctx context.Context, kind string, args []string) (string, []string, error) {
	switch kind {
	case Curator:
		cp, err := BuildJava(ctx)
		if err != nil {
			return "", nil, err
		}
		jvm := []string{"-XX:+UseSerialGC", "-Xmx256m", "-cp", cp, curatorMainClass}
		return "java", append(jvm, args...), nil
	case Kazoo:
		script, err := kazooScript()
		if err != nil {
			return "", nil, err
		}
		return pythonPath(), append([]string{"-u", script}, args...), nil
	case Gozk:
		bin, err := buildGozk(ctx)
		if err != nil {
			return "", nil, err
		}
		return bin, args, nil
	case Zkrecipes:
		bin, err := buildGozk(ctx)
		if err != nil {
			return "", nil, err
		}
		if len(args) == 0 {
			return bin, args, nil
		}
		return bin, append([]string{args[0], "--impl", "zkrecipes"}, args[1:]...), nil
	default:
		return "", nil, fmt.Errorf("unknown kind %q", kind)
	}
}

// checkLoopback refuses a --servers value with an address outside 127.0.0.0/8.
func checkLoopback(args []string) error {
	for i, a := range args {
		var v string
		switch {
		case a == "--servers" && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, "--servers="):
			v = strings.TrimPrefix(a, "--servers=")
		default:
			continue
		}
		if err := LoopbackOnly(v); err != nil {
			return err
		}
	}
	return nil
}

// LoopbackOnly returns an error unless every host:port in the comma-separated
// connect string is an IPv4 literal in 127.0.0.0/8 (an optional chroot suffix is allowed).
func LoopbackOnly(servers string) error {
	if i := strings.IndexByte(servers, '/'); i >= 0 {
		servers = servers[:i]
	}
	for _, hp := range strings.Split(servers, ",") {
		host, _, err := net.SplitHostPort(strings.TrimSpace(hp))
		if err != nil {
			return fmt.Errorf("peers: bad server address %q: %v", hp, err)
		}
		ip := net.ParseIP(host)
		if ip == nil || ip.To4() == nil || !ip.IsLoopback() {
			return fmt.Errorf("peers: server %q is not a 127.0.0.0/8 address; peers dial loopback only", hp)
		}
	}
	return nil
}

// Wait waits for the peer to exit and returns its JSON summary. A non-zero exit,
// a missing or malformed summary, or ctx ending (which kills the peer) is an error
// that carries the tail of the peer's stderr.
func (p *Process) Wait(ctx context.Context) (Summary, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Kill()
		return Summary{}, fmt.Errorf("peer %s %s: %w (killed); stderr: %s", p.Kind, p.Args[0], ctx.Err(), tail(p.Stderr(), 2000))
	}
	if p.err != nil {
		return Summary{}, fmt.Errorf("peer %s %s: %v; stderr: %s", p.Kind, p.Args[0], p.err, tail(p.Stderr(), 2000))
	}
	return parseSummary(p.Stdout())
}

// parseSummary finds the last line of out that is a JSON object.
func parseSummary(out string) (Summary, error) {
	var line string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); strings.HasPrefix(t, "{") {
			line = t
		}
	}
	if line == "" {
		return Summary{}, fmt.Errorf("peer printed no JSON summary; stdout: %s", tail(out, 2000))
	}
	var s Summary
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		return Summary{}, fmt.Errorf("peer summary %q: %v", line, err)
	}
	if err := json.Unmarshal([]byte(line), &s.Raw); err != nil {
		return Summary{}, err
	}
	return s, nil
}

// Kill kills the peer's process group and waits for it to be reaped. It is
// idempotent and safe after the peer has exited.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// Pid is the peer's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stdout returns what the peer has printed on stdout so far.
func (p *Process) Stdout() string { return p.stdout.String() }

// Stderr returns what the peer has printed on stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
