package zkr_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The child runs `zkr inspect` on the lock it runs under: the holder it
// sees is its own zkr, with the token it was given.
func TestZkrLock_ChildSeesTheLockHeldAndItsExitStatusIsReturned(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	script := fmt.Sprintf(`echo "token=$ZKR_FENCING_TOKEN path=$ZKR_LOCK_PATH"; %s inspect --json "$ZKR_LOCK_PATH"; exit 3`, zkrBin)
	code, out, stderr := run(t, c.ConnectString(), "lock", path, "--data", "e2e", "--", "sh", "-c", script)
	require.Equal(t, 3, code, "zkr exits with the command's status; stderr: %s", stderr)
	m := regexp.MustCompile(`token=(\d+) path=(\S+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, path, m[2])
	var rep struct {
		Kind  string
		Nodes []struct {
			Role  string
			Data  string
			Token int64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep), out)
	assert.Equal(t, "mutex", rep.Kind)
	require.Len(t, rep.Nodes, 1)
	assert.Equal(t, "holder", rep.Nodes[0].Role)
	assert.Equal(t, "e2e", rep.Nodes[0].Data)
	assert.Equal(t, m[1], strconv.FormatInt(rep.Nodes[0].Token, 10), "the child holds the lock with its token")
	assert.Empty(t, children(t, conn, path), "released after the command")
}

func TestZkrLock_TwoProcessesNeverRunTheirChildrenAtOnce(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	logPath := filepath.Join(t.TempDir(), "shared.log")
	// The peers' log format, checked by the peers' checker.
	script := `echo "ENTER $ID $ZKR_FENCING_TOKEN" >> "$LOG"; sleep 0.05; echo "EXIT $ID" >> "$LOG"`
	const rounds = 5
	var wg sync.WaitGroup
	codes := make(chan int, 2*rounds)
	for _, id := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				cmd := zkrCmd(zkrBin, c.ConnectString(), "lock", path, "--", "sh", "-c", script)
				cmd.Env = append(cmd.Env, "ID="+id, "LOG="+logPath)
				_ = cmd.Run()
				codes <- cmd.ProcessState.ExitCode()
			}
		}()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		assert.Zero(t, code)
	}
	rep, err := peers.CheckLog(logPath)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations, "two children ran at once")
	assert.Equal(t, rounds, rep.Acquisitions["a"])
	assert.Equal(t, rounds, rep.Acquisitions["b"])
	assert.Equal(t, 1, rep.MaxWriters)
	assert.Empty(t, children(t, conn, path))
}

// A lost lock terminates the command: SIGTERM, and SIGKILL after --grace
// when the command ignores SIGTERM. zkr connects through a proxy that
// then goes silent; with --lose-on lost the lock ends when the session is
// presumed expired (and the server expires it), with the default at
// SUSPENDED.
func TestZkrLock_LostLockTerminatesTheCommand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		trap  string
		want  string
	}{
		{"ExpiredSessionSIGTERM", []string{"--lose-on", "lost"}, `trap 'echo TERM >> "$OUT"; exit 0' TERM`, "TERM"},
		{"SuspendedSIGTERM", nil, `trap 'echo TERM >> "$OUT"; exit 0' TERM`, "TERM"},
		{"IgnoredSIGTERMThenSIGKILL", []string{"--grace", "1s"}, `trap 'echo TERM-ignored >> "$OUT"' TERM`, "TERM-ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := server(t)
			proxy := zktest.NewProxy(t, c.Servers()[0])
			out := filepath.Join(t.TempDir(), "child.out")
			script := tc.trap + `; echo started >> "$OUT"; while :; do sleep 0.1; done`
			args := append([]string{"lock", testPath(t), "--session-timeout", "2s"}, tc.flags...)
			args = append(args, "--", "sh", "-c", script)
			t.Setenv("OUT", out)
			p := start(t, proxy.Addr(), args...)
			require.Eventually(t, func() bool { return fileHas(out, "started") }, 20*time.Second, 10*time.Millisecond)
			t0 := time.Now()
			proxy.Blackhole()
			code := p.wait(t, 30*time.Second)
			t.Logf("zkr exited %d after %v: %s", code, time.Since(t0), strings.TrimSpace(p.stderr.String()))
			assert.Equal(t, 74, code, "exit status for a lost lock")
			assert.True(t, fileHas(out, tc.want), "the command got SIGTERM")
			proxy.Heal()
			conn := raw(t, c)
			require.Eventually(t, func() bool { return len(children(t, conn, testPath(t))) == 0 }, 20*time.Second, 20*time.Millisecond)
		})
	}
}

func TestZkrLock_CtrlCReleasesAndLeavesNoNode(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	out := filepath.Join(t.TempDir(), "child.out")
	t.Setenv("OUT", out)
	holder := start(t, c.ConnectString(), "lock", path, "--", "sh", "-c", `trap 'echo INT >> "$OUT"; exit 5' INT; echo started >> "$OUT"; while :; do sleep 0.1; done`)
	require.Eventually(t, func() bool { return fileHas(out, "started") }, 20*time.Second, 10*time.Millisecond)

	// A second zkr waits for the lock; Ctrl-C while waiting: exit 130, no node.
	waiter := start(t, c.ConnectString(), "lock", path, "--", "true")
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 2 }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, waiter.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 130, waiter.wait(t, 30*time.Second))
	assert.Len(t, children(t, conn, path), 1, "the interrupted waiter deleted its node")

	// Ctrl-C on the holder reaches the command, whose status zkr returns.
	require.NoError(t, holder.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 5, holder.wait(t, 30*time.Second))
	assert.True(t, fileHas(out, "INT"))
	assert.Empty(t, children(t, conn, path), "released: no node left")
}

func TestZkrLock_WaitElapsesWithExit73(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	out := filepath.Join(t.TempDir(), "child.out")
	t.Setenv("OUT", out)
	holder := start(t, c.ConnectString(), "lock", path, "--", "sh", "-c", `echo started >> "$OUT"; exec sleep 60`)
	require.Eventually(t, func() bool { return fileHas(out, "started") }, 20*time.Second, 10*time.Millisecond)
	code, _, stderr := run(t, c.ConnectString(), "lock", path, "--wait", "300ms", "--", "true")
	assert.Equal(t, 73, code, stderr)
	assert.Len(t, children(t, conn, path), 1)
	require.NoError(t, holder.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 128+int(syscall.SIGTERM), holder.wait(t, 30*time.Second), "sleep died of the forwarded SIGTERM")
	assert.Empty(t, children(t, conn, path))
}

func TestZkrElect_CampaignResignAndListen(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	listener := start(t, c.ConnectString(), "elect", path, "--listen")
	first := start(t, c.ConnectString(), "elect", path, "--id", "first")
	require.Eventually(t, func() bool { return strings.Contains(first.stdout.String(), "leader first token ") }, 20*time.Second, 10*time.Millisecond)
	second := start(t, c.ConnectString(), "elect", path, "--id", "second")
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 2 }, 20*time.Second, 10*time.Millisecond)
	assert.NotContains(t, second.stdout.String(), "leader")

	require.NoError(t, first.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 0, first.wait(t, 30*time.Second), "Ctrl-C resigns cleanly")
	require.Eventually(t, func() bool { return strings.Contains(second.stdout.String(), "leader second token ") }, 20*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		s := listener.stdout.String()
		return strings.Contains(s, " leader first ") && strings.Contains(s, " leader second ")
	}, 20*time.Second, 10*time.Millisecond, "the listener saw both leaders")

	require.NoError(t, second.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, second.wait(t, 30*time.Second))
	require.Eventually(t, func() bool { return strings.Contains(listener.stdout.String(), "no leader") }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, listener.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 0, listener.wait(t, 30*time.Second))
	assert.Empty(t, children(t, conn, path))

	// With a command: it runs while leading, then zkr resigns.
	code, out, _ := run(t, c.ConnectString(), "elect", path, "--selector", "--", "sh", "-c", `echo "epoch $ZKR_FENCING_TOKEN"`)
	assert.Equal(t, 0, code)
	assert.Regexp(t, `epoch \d+`, out)
	assert.Empty(t, children(t, conn, path))
}

func TestZkr_UsageAndHelp(t *testing.T) {
	require.NoError(t, buildErr)
	for _, args := range [][]string{{"lock", "--help"}, {"elect", "-h"}, {"inspect", "--help"}, {"help"}} {
		code, out, _ := run(t, "127.0.0.1:1", args...)
		assert.Equal(t, 0, code, args)
		assert.Contains(t, out, "usage", args)
	}
	for _, args := range [][]string{{}, {"bogus"}, {"lock"}, {"lock", "/p"}, {"lock", "/p", "--", ""}, {"lock", "-n", "0", "/p", "--", "true"},
		{"lock", "/p", "--bogus", "--", "true"}, {"elect"}, {"elect", "/p", "--listen", "--", "true"}, {"inspect"}, {"lock", "/p", "--lose-on", "never", "--", "true"}} {
		code, _, _ := run(t, "127.0.0.1:1", args...)
		assert.Equal(t, 64, code, "%q", args)
	}
	code, _, stderr := run(t, "", "inspect", "/p", "--connect-timeout", "1s")
	assert.Equal(t, 64, code, "no servers is a usage error: %s", stderr)
}

// zkr lock -n 2: three processes contend for a semaphore of two; never more
// than two children run at once, and inspect shows the semaphore.
func TestZkrLockN_AtMostNChildrenAtOnce(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	logPath := filepath.Join(t.TempDir(), "shared.log")
	inspectOut := filepath.Join(t.TempDir(), "inspect.out")
	script := fmt.Sprintf(`echo "SENTER $ID $ZKR_FENCING_TOKEN" >> "$LOG"; %s inspect "%s" >> "$INSPECT"; sleep 0.2; echo "SEXIT $ID" >> "$LOG"`, zkrBin, path)
	const rounds = 3
	var wg sync.WaitGroup
	codes := make(chan int, 3*rounds)
	for _, id := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				cmd := zkrCmd(zkrBin, c.ConnectString(), "lock", "-n", "2", path, "--", "sh", "-c", script)
				cmd.Env = append(cmd.Env, "ID="+id, "LOG="+logPath, "INSPECT="+inspectOut)
				_ = cmd.Run()
				codes <- cmd.ProcessState.ExitCode()
			}
		}()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		assert.Zero(t, code)
	}
	rep, err := peers.CheckLog(logPath, peers.MaxLeases(2))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations, "more than two children at once")
	assert.LessOrEqual(t, rep.MaxLeases, 2)
	t.Logf("max children at once: %d (of 2), %d runs", rep.MaxLeases, rep.Acquisitions["a"]+rep.Acquisitions["b"]+rep.Acquisitions["c"])
	assert.True(t, fileHas(inspectOut, "(semaphore, "), "inspect recognises the semaphore")
	assert.True(t, fileHas(inspectOut, "lease "), "inspect lists the leases")
	assert.Empty(t, children(t, conn, path+"/leases"))
}

// Inspect tells a semaphore's acquirer, which holds its internal lock and
// waits for a lease, from the contenders queued behind it.
func TestZkrInspect_ShowsTheSemaphoresAcquirerAndWhoWaitsBehindIt(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	out := filepath.Join(t.TempDir(), "holders.out")
	t.Setenv("OUT", out)
	// Each holder's command runs until its zkr is gone, holding none of
	// zkr's output pipes (so that the kill at the test's end ends it all).
	holder := `echo started >> "$OUT"; exec >/dev/null 2>&1; while kill -0 $PPID; do sleep 0.05; done`
	for range 2 {
		start(t, c.ConnectString(), "lock", "-n", "2", path, "--", "sh", "-c", holder)
	}
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(out)
		return strings.Count(string(b), "started") == 2
	}, 20*time.Second, 10*time.Millisecond)

	// The next one takes the internal lock and waits for the count with
	// its lease node created; the one after queues on the internal lock.
	start(t, c.ConnectString(), "lock", "-n", "2", path, "--", "true")
	require.Eventually(t, func() bool { return len(children(t, conn, path+"/leases")) == 3 }, 20*time.Second, 10*time.Millisecond)
	start(t, c.ConnectString(), "lock", "-n", "2", path, "--", "true")
	require.Eventually(t, func() bool { return len(children(t, conn, path+"/locks")) == 2 }, 20*time.Second, 10*time.Millisecond)

	code, stdout, stderr := run(t, c.ConnectString(), "inspect", "--json", path)
	require.Zero(t, code, stderr)
	var rep struct {
		Kind  string
		Nodes []struct{ Role, Node string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	assert.Equal(t, "semaphore", rep.Kind)
	var roles []string
	for _, n := range rep.Nodes {
		roles = append(roles, strings.SplitN(n.Node, "/", 2)[0]+":"+n.Role)
	}
	assert.Equal(t, []string{"leases:lease", "leases:lease", "leases:lease", "locks:acquiring", "locks:waiting"}, roles)
}
