//go:build linux

package chaos_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// buildClient builds ./client once per test run (with -race when the test
// binary has it) and returns the binary's path.
func buildClient(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the go tool is needed to build the chaos client: %v", err)
		}
		t.Skipf("the go tool is needed to build the chaos client: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "chaos-client")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", append(args, "./client")...).CombinedOutput()
	if err != nil {
		t.Fatalf("building the chaos client: %v\n%s", err, out)
	}
	return bin
}

// proc is one client process with its own proxies, one per server, so
// that the test can cut it off from the whole ensemble.
type proc struct {
	id       string
	cmd      *exec.Cmd
	proxies  []*zktest.Proxy
	sessFile string
	stdout   bytes.Buffer
	stderr   bytes.Buffer
	exited   chan struct{}
	waitErr  error
	killed   bool
}

type clientSummary struct {
	ID           string `json:"id"`
	Acquisitions int    `json:"acquisitions"`
	Losses       int    `json:"losses"`
	Errors       int    `json:"errors"`
	Leaked       string `json:"leaked,omitempty"`
}

// startProc starts client id. Called from the test goroutine only.
func (r *run) startProc(t *testing.T, id string) *proc {
	t.Helper()
	p := &proc{id: id, sessFile: filepath.Join(r.dir, id+".session"), exited: make(chan struct{})}
	var addrs []string
	for _, s := range r.ens.Servers() {
		px := zktest.NewProxy(t, s)
		p.proxies = append(p.proxies, px)
		addrs = append(addrs, px.Addr())
	}
	p.cmd = exec.Command(r.bin,
		"-servers", strings.Join(addrs, ","), "-path", r.path, "-id", id, "-log", r.logPath,
		"-store", r.store.Addr(), "-session-timeout", sessionTimeout.String(), "-session-file", p.sessFile,
		"-lifetime", (*flagDuration + 10*time.Minute).String(), "-lease-time", flagLease.String())
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
	r.procs = append(r.procs, p)
	return p
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return !p.killed
	}
}

// session reads the client's current session id and password.
func (p *proc) session() (int64, []byte, error) {
	b, err := os.ReadFile(p.sessFile)
	if err != nil {
		return 0, nil, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, nil, fmt.Errorf("session file %s: %q", p.sessFile, b)
	}
	id, err := strconv.ParseUint(f[0], 16, 64)
	if err != nil {
		return 0, nil, err
	}
	pw, err := hex.DecodeString(f[1])
	return int64(id), pw, err
}

func (p *proc) blackhole() {
	for _, px := range p.proxies {
		px.Blackhole()
	}
}

func (p *proc) heal() {
	for _, px := range p.proxies {
		px.Heal()
	}
}

// stop asks the client to finish (SIGTERM) and returns its summary.
func (p *proc) stop(timeout time.Duration) (clientSummary, error) {
	var sum clientSummary
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return sum, fmt.Errorf("client %s did not stop within %v after SIGTERM; stderr:\n%s", p.id, timeout, p.stderr.String())
	}
	if p.waitErr != nil {
		return sum, fmt.Errorf("client %s: %v; stderr:\n%s", p.id, p.waitErr, p.stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(p.stdout.Bytes()), &sum); err != nil {
		return sum, fmt.Errorf("client %s summary %q: %v", p.id, p.stdout.String(), err)
	}
	return sum, nil
}
