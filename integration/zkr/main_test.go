// Package zkr_test runs the zkr command line tool (cmd/zkr) end to end, as
// separate processes, against a real ZooKeeper started by zktest.
package zkr_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/zktest"
)

var (
	shared    *zktest.Cluster
	sharedErr error
	zkrBin    string
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zkr-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zkrBin, buildErr = build(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	shared, sharedErr = zktest.StartCluster(ctx)
	cancel()
	code := m.Run()
	if shared != nil {
		_ = shared.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles cmd/zkr, its own module, into dir.
func build(dir string) (string, error) {
	out, err := osexec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/zkrecipes/zkrecipes").Output()
	if err != nil {
		return "", fmt.Errorf("locate the zkrecipes module: %w", err)
	}
	bin := filepath.Join(dir, "zkr")
	cmd := osexec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(strings.TrimSpace(string(out)), "cmd", "zkr")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cmd/zkr: %v\n%s", err, b)
	}
	return bin, nil
}

// server returns the shared server and the zkr binary, skipping the test
// (failing it under CI) when either is missing.
func server(t *testing.T) *zktest.Cluster {
	t.Helper()
	require.NoError(t, buildErr)
	if sharedErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no ZooKeeper: %v", sharedErr)
		}
		t.Skipf("no ZooKeeper: %v", sharedErr)
	}
	return shared
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func testPath(t *testing.T) string { return "/zkr/" + unsafe.ReplaceAllString(t.Name(), "_") }

// proc is a running zkr.
type proc struct {
	cmd    *osexec.Cmd
	stdout zktest.LogBuffer
	stderr zktest.LogBuffer
	done   chan struct{}
}

// start runs zkr with args against servers (ZK_SERVERS) and kills it when
// the test ends.
func start(t *testing.T, servers string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: osexec.Command(zkrBin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "ZK_SERVERS="+servers)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("zkr %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// wait waits for zkr to exit and returns its status.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("zkr still running after %v\nstdout:\n%s\nstderr:\n%s", timeout, p.stdout.String(), p.stderr.String())
		return -1
	}
}

// run runs zkr to completion.
func run(t *testing.T, servers string, args ...string) (int, string, string) {
	t.Helper()
	p := start(t, servers, args...)
	code := p.wait(t, time.Minute)
	return code, p.stdout.String(), p.stderr.String()
}

// raw opens a plain go-zookeeper connection, for looking at what is on
// the server from outside the library.
func raw(t *testing.T, c *zktest.Cluster) *zk.Conn { return c.Observer(t) }

// children lists path's children from outside (none if it does not exist).
func children(t *testing.T, conn *zk.Conn, path string) []string {
	return zktest.Children(t, conn, path)
}

// fileHas reports whether the file at path contains s.
func fileHas(path, s string) bool {
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), s)
}

// zkrCmd returns a command running zkr against servers.
func zkrCmd(bin, servers string, args ...string) *osexec.Cmd {
	cmd := osexec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ZK_SERVERS="+servers)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
