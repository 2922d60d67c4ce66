package zktest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// register registers open under a name of this test's own, unregistered when the test
// ends (so that -count=2 registers it again), and returns the name.
func register(t *testing.T, open OpenBackend) string {
	t.Helper()
	name := fmt.Sprintf("test-%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano())
	require.NoError(t, RegisterBackend(name, open))
	t.Cleanup(func() {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		delete(registry.open, name)
		for i, n := range registry.names {
			if n == name {
				registry.names = append(registry.names[:i], registry.names[i+1:]...)
				break
			}
		}
	})
	return name
}

func TestRegisterBackend_RefusesTheHarnessNamesAndASecondRegistration(t *testing.T) {
	open := func(context.Context) (Backend, error) { return nil, ErrNoBackend }
	for _, name := range []string{"", " ", "auto", BackendServers, "Java", BackendJava} {
		require.ErrorIs(t, RegisterBackend(name, open), ErrBackendName, "name %q", name)
	}
	name := register(t, open)
	require.ErrorIs(t, RegisterBackend(strings.ToUpper(name), open), ErrBackendName, "the same name twice, in another case")
	require.ErrorIs(t, RegisterBackend("test-no-function", nil), ErrBackendName)
	_, ok := registered("test-no-function")
	require.False(t, ok, "a refused registration registers nothing")
}

func TestStartCluster_DockerWithoutItsPackageSaysToImportIt(t *testing.T) {
	if _, ok := registered(BackendDocker); ok {
		t.Skip("this test binary imports the docker backend")
	}
	_, err := StartCluster(context.Background(), WithBackend(BackendDocker))
	require.ErrorIs(t, err, ErrNoBackend, "a backend not linked in is a missing backend: Start skips, or fails in CI")
	require.Contains(t, err.Error(), DockerPackage)
}

func TestStartCluster_UnknownBackendNamesTheRegisteredOnes(t *testing.T) {
	name := register(t, func(context.Context) (Backend, error) { return nil, ErrNoBackend })
	_, err := StartCluster(context.Background(), WithBackend("no-such-backend"))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNoBackend, "a misspelt name is a mistake, not a missing backend")
	require.Contains(t, err.Error(), name)
}

// pluggedJava is a Backend outside the harness's own, as zktest/docker is, that starts
// its servers with the java backend: real servers behind the exported interface.
type pluggedJava struct {
	j     *javaBackend
	plans atomic.Pointer[LaunchPlan]
}

func (b *pluggedJava) Launch(ctx context.Context, p LaunchPlan) ([]BackendServer, error) {
	b.plans.Store(&p)
	specs := p.Servers[0].specs
	ms, err := b.j.launch(ctx, p.Dir, specs, p.Servers[0].cfg)
	if err != nil {
		return nil, err
	}
	out := make([]BackendServer, len(ms))
	for i, m := range ms {
		out[i] = memberServer{m}
	}
	return out, nil
}

// memberServer is a harness member seen as a BackendServer.
type memberServer struct{ m member }

func (s memberServer) Start(ctx context.Context) error         { return s.m.start(ctx) }
func (s memberServer) Kill(context.Context) error              { return s.m.kill() }
func (s memberServer) Stop(context.Context) error              { return s.m.stop() }
func (s memberServer) Cont(context.Context) error              { return s.m.cont() }
func (s memberServer) Exited() <-chan struct{}                 { return s.m.exited() }
func (s memberServer) LogTail(_ context.Context, n int) string { return s.m.logTail(n) }
func (s memberServer) Close(context.Context) error             { return s.m.close() }

func TestRegisteredBackend_ServesAnEnsembleAndItsFaults(t *testing.T) {
	j, err := newJavaBackend()
	if isNoBackend(err) {
		if inCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	require.NoError(t, err)
	b := &pluggedJava{j: j}
	name := register(t, func(context.Context) (Backend, error) { return b, nil })

	c := Start(t, WithBackend(name), WithSize(3), WithExtendedTypes(false))
	require.Equal(t, name, c.Backend())
	p := b.plans.Load()
	require.NotNil(t, p)
	require.Len(t, p.Servers, 3)
	require.Nil(t, p.JVMFlags, "no WithJVMFlags: the backend's own defaults")
	for i, s := range p.Servers {
		require.Equal(t, i+1, s.ID)
		require.Equal(t, c.Servers()[i], s.Addr())
		cfg := s.ZooCfg("/data")
		for _, want := range []string{"dataDir=/data\n", fmt.Sprintf("clientPort=%d\n", s.ClientPort),
			"clientPortAddress=127.0.0.1\n", "extendedTypesEnabled=false\n"} {
			require.Contains(t, cfg, want)
		}
		for _, peer := range p.Servers {
			require.Contains(t, cfg, fmt.Sprintf("server.%d=127.0.0.1:", peer.ID))
		}
	}

	// The faults go through the registered backend's servers.
	require.NoError(t, c.Kill(0))
	_, err = c.Srvr(0)
	require.Error(t, err, "a killed server answers no four-letter word")
	require.NoError(t, c.Restart(0))
	srvr, err := c.Srvr(0)
	require.NoError(t, err)
	require.Contains(t, []string{"leader", "follower"}, srvr["Mode"])
}

// closeCounter is a BackendServer that counts its Close calls and does nothing else.
type closeCounter struct{ closes *atomic.Int32 }

func (closeCounter) Start(context.Context) error         { return nil }
func (closeCounter) Kill(context.Context) error          { return nil }
func (closeCounter) Stop(context.Context) error          { return nil }
func (closeCounter) Cont(context.Context) error          { return nil }
func (closeCounter) Exited() <-chan struct{}             { return nil }
func (closeCounter) LogTail(context.Context, int) string { return "" }
func (c closeCounter) Close(context.Context) error       { c.closes.Add(1); return nil }

type launchFunc func(context.Context, LaunchPlan) ([]BackendServer, error)

func (f launchFunc) Launch(ctx context.Context, p LaunchPlan) ([]BackendServer, error) {
	return f(ctx, p)
}

// A backend that starts fewer servers than asked for fails the start, with the counts,
// and what it did start is closed, not left running.
func TestRegisteredBackend_FewerServersThanPlannedFailTheStartAndAreClosed(t *testing.T) {
	var closes atomic.Int32
	b := launchFunc(func(context.Context, LaunchPlan) ([]BackendServer, error) {
		return []BackendServer{closeCounter{&closes}, nil}, nil
	})
	name := register(t, func(context.Context) (Backend, error) { return b, nil })
	_, err := StartCluster(context.Background(), WithBackend(name), WithSize(3))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNoBackend, "a faulty backend is no missing one: Start must not skip")
	require.Equal(t, "zktest: "+name+" backend: it started 2 servers for 3", err.Error())
	require.Equal(t, int32(1), closes.Load(), "the one server started is closed")
}
