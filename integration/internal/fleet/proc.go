//go:build linux

package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// buildClient builds the package ./client of the test's working directory
// into <suite>-client in a fresh temporary directory, with -race when the
// test binary has the race detector, and returns the binary's path. The
// build is bounded by ctx and by 5 minutes. Without the go tool the test is
// skipped, or failed when the environment variable CI is set.
func buildClient(ctx context.Context, t testing.TB, suite string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the go tool is needed to build the %s client: %v", suite, err)
		}
		t.Skipf("the go tool is needed to build the %s client: %v", suite, err)
	}
	bin := filepath.Join(t.TempDir(), suite+"-client")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", append(args, "./client")...).CombinedOutput()
	if err != nil {
		t.Fatalf("building the %s client: %v\n%s", suite, err, out)
	}
	return bin
}

// Proc is one client process, with a proxy of its own in front of each
// server, so that a fault can cut it off from the whole ensemble. It
// never outlives the test binary, nor the test that started it. Its
// methods are for the test goroutine only.
type Proc struct {
	// ID is the client's id, its -id.
	ID      string
	cmd     *exec.Cmd
	proxies []*zktest.Proxy
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	exited  chan struct{} // closed once Wait returned
	waitErr error         // Wait's error; read after exited is closed
	killed  bool
}

// startProc starts bin as client id, with one new proxy per server of
// servers; args returns the client's arguments given the proxies'
// addresses, joined by commas. It registers a t.Cleanup that kills the
// process if it still runs, and fails the test when the process does not
// start.
func startProc(t testing.TB, bin, id string, servers []string, args func(id, servers string) []string) *Proc {
	t.Helper()
	p := &Proc{ID: id, exited: make(chan struct{})}
	var addrs []string
	for _, s := range servers {
		px := zktest.NewProxy(t, s)
		p.proxies = append(p.proxies, px)
		addrs = append(addrs, px.Addr())
	}
	p.cmd = exec.Command(bin, args(id, strings.Join(addrs, ","))...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test binary
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting client %s: %v", id, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// output returns what the process wrote on stdout and stderr, once it has
// exited (before then, a note saying so).
func (p *Proc) output() (stdout, stderr string) {
	select {
	case <-p.exited:
		return p.stdout.String(), p.stderr.String()
	default:
		return "(still running)\n", "(still running)\n"
	}
}

// Alive reports whether the process runs and the test did not kill it.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return !p.killed
	}
}

// Proxies returns the process's proxies, one per server, in the order of
// the ensemble's servers.
func (p *Proc) Proxies() []*zktest.Proxy { return p.proxies }

// Blackhole silences every proxy of the process (zktest.Proxy.Blackhole)
// until Heal.
func (p *Proc) Blackhole() {
	for _, px := range p.proxies {
		px.Blackhole()
	}
}

// SetDelay delays the traffic of every proxy of the process by d, both
// ways, until Heal.
func (p *Proc) SetDelay(d time.Duration) {
	for _, px := range p.proxies {
		px.SetDelay(d)
	}
}

// Heal undoes Blackhole and SetDelay on every proxy of the process.
func (p *Proc) Heal() {
	for _, px := range p.proxies {
		px.Heal()
		px.SetDelay(0)
	}
}

// Disarm disarms the reply losses still pending on every proxy of the
// process (zktest.Proxy.Disarm).
func (p *Proc) Disarm() {
	for _, px := range p.proxies {
		px.Disarm()
	}
}

// kill marks the process killed, sends it SIGKILL and waits until it has
// exited, or ctx ends.
func (p *Proc) kill(ctx context.Context) error {
	p.killed = true
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("client %s did not exit after SIGKILL: %w", p.ID, ctx.Err())
	}
}

// stop asks the client to finish (SIGTERM) and decodes its summary line
// into sum. When the client has not exited by the time ctx ends, stop
// kills it and returns an error, as it does for an exit status other than
// 0 or a summary it cannot decode; each error quotes the client's stderr
// or stdout.
func (p *Proc) stop(ctx context.Context, sum any) error {
	sent := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("client %s did not stop within %v after SIGTERM; stderr:\n%s", p.ID, time.Since(sent).Round(time.Second), p.stderr.String())
	}
	if p.waitErr != nil {
		return fmt.Errorf("client %s: %v; stderr:\n%s", p.ID, p.waitErr, p.stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(p.stdout.Bytes()), sum); err != nil {
		return fmt.Errorf("client %s summary %q: %v", p.ID, p.stdout.String(), err)
	}
	return nil
}

// Summary is the summary line a client prints when it stops (see
// Process.Finish).
type Summary interface {
	// Goroutines returns the goroutines the client found left after it
	// closed its Sessions (Process.Leftover), empty when none.
	Goroutines() string
}

// StopAll heals every process of f, then stops, one after the other, each
// one the test did not kill: SIGTERM, then at most 30 s (and no longer
// than ctx) to exit with status 0 and a summary line that decodes into S.
// It asserts, with t, that each of them did so, and that it left no
// goroutine behind, and returns the summaries in the order the processes
// were started. Call it from the test goroutine only.
func StopAll[S Summary](ctx context.Context, t testing.TB, f *Fleet) []S {
	t.Helper()
	for _, p := range f.Procs {
		p.Heal()
	}
	var sums []S
	for _, p := range f.Procs {
		if p.killed {
			continue
		}
		var sum S
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := p.stop(sctx, &sum)
		cancel()
		if assert.NoError(t, err) {
			sums = append(sums, sum)
			assert.Empty(t, sum.Goroutines(), "goroutines left in client %s after Session.Close", p.ID)
		}
	}
	return sums
}
