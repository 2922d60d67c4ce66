package recipes_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// revokePeer is a run of the Curator revocation peer (peers/java/RevokePeer.java).
type revokePeer struct {
	mu  sync.Mutex
	out bytes.Buffer
	err bytes.Buffer
}

func (p *revokePeer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// line returns the text after prefix on the first line that starts with
// it, and whether there is one.
func (p *revokePeer) line(prefix string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimSpace(strings.TrimPrefix(l, prefix)), true
		}
	}
	return "", false
}

// startRevokePeer runs RevokePeer with action, the servers and path; it
// is killed when the test ends.
func startRevokePeer(t *testing.T, action string, servers []string, path string) *revokePeer {
	t.Helper()
	peers.Require(t, peers.Curator)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := peers.BuildJava(ctx)
	require.NoError(t, err)
	p := &revokePeer{}
	cmd := exec.Command("java", "-XX:+UseSerialGC", "-Xmx128m", "-cp", cp, "RevokePeer", action, strings.Join(servers, ","), path)
	cmd.Stdout = p
	cmd.Stderr = &p.err
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if t.Failed() {
			t.Logf("RevokePeer %s: stdout:\n%s\nstderr:\n%s", action, p.out.String(), p.err.String())
		}
	})
	return p
}

func (p *revokePeer) await(t *testing.T, prefix string) string {
	t.Helper()
	var v string
	require.Eventually(t, func() bool {
		var ok bool
		v, ok = p.line(prefix)
		return ok
	}, time.Minute, 10*time.Millisecond, "RevokePeer never printed %q", prefix)
	return v
}

// A Curator mutex made revocable (makeRevocable) hears a zkrecipes Revoke
// and releases; its node, as Curator makes a revocable lock's, holds no
// data, and a zkrecipes revocable node looks the same.
func TestInterop_CuratorRevocableHolderHearsRevoke(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	path := testPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	p := startRevokePeer(t, "hold", c.Servers(), path)
	node := p.await(t, "HELD ")
	data, _, err := raw(t, c).Get(node)
	require.NoError(t, err)
	assert.Empty(t, data, "a revocable Curator lock's node holds no data")

	m := zr.NewMutex(s.Session, path, zr.WithRevocable(true))
	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, zr.ErrLocked, "the Curator holder excludes zkrecipes")

	// A zkrecipes waiter queues behind the Curator holder: the revoke
	// write on the node it watches must not let it in, the release must.
	type result struct {
		l   *zr.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := m.Acquire(ctx)
		got <- result{l, err}
	}()
	require.Eventually(t, func() bool {
		ps, err := m.Participants(ctx)
		return err == nil && len(ps) == 2
	}, 30*time.Second, 10*time.Millisecond, "the zkrecipes waiter queues")
	require.NoError(t, zr.Revoke(ctx, s.Session, node))
	p.await(t, "REVOKED")
	var r result
	select {
	case r = <-got:
	case <-time.After(time.Minute):
		t.Fatal("the zkrecipes waiter never got the lock after Curator released it")
	}
	require.NoError(t, r.err, "the lock is free once Curator released it")
	_, releasing := p.line("RELEASING") // printed before its release, 500 ms after the request
	require.True(t, releasing, "the waiter got in only with Curator's release, not on the revoke write")
	l := r.l
	mine, _, err := raw(t, c).Get(l.Path())
	require.NoError(t, err)
	assert.Empty(t, mine, "a revocable zkrecipes node holds no data either")
	require.NoError(t, l.Release(ctx))
}

// A zkrecipes holder made WithRevocable hears Curator's
// Revoker.attemptRevoke; a holder that did not opt in is not disturbed.
func TestInterop_RevocableHolderHearsCuratorRevoker(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil)
	path := testPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	plain, err := zr.NewMutex(s.Session, path+"/plain").Acquire(ctx)
	require.NoError(t, err)
	assert.Nil(t, plain.Revoked(), "a lease that did not opt in has no revocation channel")
	startRevokePeer(t, "revoke", c.Servers(), plain.Path()).await(t, "DONE")

	l, err := zr.NewMutex(s.Session, path+"/revocable", zr.WithRevocable(true)).Acquire(ctx)
	require.NoError(t, err)
	require.NotNil(t, l.Revoked())
	select {
	case <-l.Revoked():
		t.Fatal("revoked before anyone asked")
	default:
	}
	startRevokePeer(t, "revoke", c.Servers(), l.Path()).await(t, "DONE")
	select {
	case <-l.Revoked():
	case <-time.After(30 * time.Second):
		t.Fatal("the revocable holder never heard Curator's Revoker")
	}
	require.NoError(t, l.Err(), "a revocation request does not end the lease")
	require.NoError(t, l.Release(ctx))

	// By now the plain holder's node has had __REVOKE__ written into it.
	data, _, err := raw(t, c).Get(plain.Path())
	require.NoError(t, err)
	require.Equal(t, "__REVOKE__", string(data), "Curator's Revoker wrote the plain holder's node")
	require.NoError(t, plain.Err(), "a holder that did not opt in keeps its lease")
	require.NoError(t, plain.Release(ctx))
}
