package recipes_test

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// curatorView is a running Java peer of integration/peers/java that
// answers one command per line (ExtrasPeer: Curator's own view of a
// semaphore's lease nodes and of an election's leader; DiscoveryPeer:
// Curator's ServiceDiscovery).
type curatorView struct {
	class string // the peer's class, for messages
	in    io.WriteCloser
	lines chan string
}

// startCuratorView starts an ExtrasPeer on the test's server.
func startCuratorView(t *testing.T) *curatorView {
	t.Helper()
	return startLinePeer(t, "ExtrasPeer", server(t).ConnectString())
}

// startLinePeer starts the peer class zkrecipes.peers.<class> with args,
// skipping the test when Curator is not available (failing it under CI),
// waits for its READY line, and ends it with the test: its standard input
// is closed (the peer returns what it holds and exits), and it is killed
// if it has not exited 20 s later.
func startLinePeer(t *testing.T, class string, args ...string) *curatorView {
	t.Helper()
	peers.Require(t, peers.Curator)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := peers.BuildJava(ctx)
	require.NoError(t, err)
	cmd := exec.Command("java", append([]string{"-XX:+UseSerialGC", "-Xmx256m", "-cp", cp, "zkrecipes.peers." + class}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	v := &curatorView{class: class, in: in, lines: make(chan string)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(v.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			v.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		exited := make(chan struct{})
		go func() {
			for range v.lines { // drain until the peer closes its output
			}
			<-read
			_ = cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", class, stderr.String())
		}
	})
	require.Equal(t, "READY", v.next(t))
	return v
}

// next returns the peer's next line.
func (v *curatorView) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-v.lines:
		require.True(t, ok, "%s exited", v.class)
		return l
	case <-time.After(30 * time.Second):
		require.FailNow(t, v.class+" did not answer")
		return ""
	}
}

// ask sends one command and returns the answer's fields after its first
// word, which must be want.
func (v *curatorView) ask(t *testing.T, want string, cmd ...string) []string {
	t.Helper()
	_, err := io.WriteString(v.in, strings.Join(cmd, " ")+"\n")
	require.NoError(t, err)
	f := strings.Fields(v.next(t))
	require.NotEmpty(t, f)
	require.Equal(t, want, f[0], "answer to %v: %v", cmd, f)
	return f[1:]
}

func TestInterop_SemaphoreParticipantsAndAvailableAgreeWithCurator(t *testing.T) {
	path := testPath(t)
	cur := startCuratorView(t)
	s := connect(t, server(t), nil).Session
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sem := zr.NewSemaphore(s, path, 3, zr.WithNodeData([]byte("go")))

	// Curator holds two leases: Go sees them.
	curNodes := cur.ask(t, "OK", "acquire", path, "3", "2", "curator")
	require.Len(t, curNodes, 2)
	free, err := sem.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, free)
	ps, err := sem.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	for _, p := range ps {
		assert.Equal(t, "curator", string(p.Data))
		assert.True(t, p.Holder)
	}
	assert.ElementsMatch(t, curNodes, nodeNames(ps))

	// Go takes the last lease: Curator's getParticipantNodes sees it.
	leases, err := sem.TryAcquire(ctx, 1)
	require.NoError(t, err)
	free, err = sem.Available(ctx)
	require.NoError(t, err)
	assert.Zero(t, free)
	ps, err = sem.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 3)
	assert.Equal(t, "go", string(ps[2].Data), "the newest lease is last")
	assert.Equal(t, leases[0].Token(), ps[2].Token)
	seen := cur.ask(t, "NODES", "nodes", path, "3")
	require.Len(t, seen, 1)
	assert.Equal(t, sorted(nodeNames(ps)), strings.Split(seen[0], ","), "Curator lists the same lease nodes")

	// Curator returns its leases: both see only Go's.
	cur.ask(t, "OK", "returnall")
	free, err = sem.Available(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, free)
	seen = cur.ask(t, "NODES", "nodes", path, "3")
	assert.Equal(t, []string{baseName(leases[0].Path())}, seen)
	require.NoError(t, leases[0].Release(ctx))
}

func TestInterop_CuratorReadsAProclaimedValueAsTheLeaderID(t *testing.T) {
	for _, tc := range []struct {
		layout zr.ElectionLayout
		ask    string
	}{{zr.LatchLayout, "latchleader"}, {zr.SelectorLayout, "selectorleader"}} {
		t.Run(tc.layout.String(), func(t *testing.T) {
			path := testPath(t)
			cur := startCuratorView(t)
			s := connect(t, server(t), nil).Session
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			e := zr.NewElection(s, path, zr.WithLayout(tc.layout), zr.WithParticipantID("go-1"), zr.WithProclaim(true))
			lease, err := e.Campaign(ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"true", "go-1"}, cur.ask(t, "LEADER", tc.ask, path))
			require.NoError(t, e.Proclaim(ctx, lease, []byte("go-2")))
			assert.Equal(t, []string{"true", "go-2"}, cur.ask(t, "LEADER", tc.ask, path))
			require.NoError(t, lease.Release(ctx))
		})
	}
}

// A Curator LeaderSelector waiting behind a Go leader that proclaims takes
// over when the Go leader resigns: its mutex waiter looks again on the data
// change (a Curator LeaderLatch would not: see Election.Proclaim).
func TestInterop_CuratorSelectorTakesOverAfterAGoLeaderProclaimed(t *testing.T) {
	path := testPath(t)
	_, logPath := openShareLog(t)
	s := connect(t, server(t), nil).Session
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := zr.NewElection(s, path, zr.WithLayout(zr.SelectorLayout), zr.WithParticipantID("go"))
	lease, err := e.Campaign(ctx)
	require.NoError(t, err)
	startCurator(t, "selector", "cs", path, logPath, 40*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		ps, err := e.Participants(ctx)
		return err == nil && len(ps) == 2
	}, 30*time.Second, 10*time.Millisecond, "the Curator selector queues behind the Go leader")

	require.NoError(t, e.Proclaim(ctx, lease, []byte("go-2")))
	got, err := e.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "go-2", string(got.Data))
	require.NoError(t, lease.Release(ctx))
	waitFirstLines(t, logPath, "cs")
}

func nodeNames(ps []zr.Participant) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Node
	}
	return out
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
