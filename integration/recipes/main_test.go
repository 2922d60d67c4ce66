// Package recipes_test is the real-ZooKeeper contract suite of zkrecipes:
// every test here runs against a real server started by zktest (or the
// ensemble named by ZK_SERVERS), never against a mock.
package recipes_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

// shared is one standalone server for the tests that inject no server
// fault; each test works under its own path.
var (
	shared    *zktest.Cluster
	sharedErr error
)

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	shared, sharedErr = zktest.StartCluster(ctx)
	cancel()
	code := m.Run()
	if shared != nil {
		_ = shared.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left after the suite: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// server returns the shared server, skipping the test (failing it under
// CI) when none could be started.
func server(t *testing.T) *zktest.Cluster {
	t.Helper()
	if sharedErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no ZooKeeper for the contract suite: %v", sharedErr)
		}
		t.Skipf("no ZooKeeper for the contract suite: %v", sharedErr)
	}
	return shared
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// testPath returns a path unique to the test.
func testPath(t *testing.T) string {
	return "/t/" + unsafe.ReplaceAllString(t.Name(), "_")
}

// client is one zkrecipes Session with the handle to expire it.
type client struct {
	*zr.Session
	capture *zktest.SessionCapture
	cluster *zktest.Cluster
}

// connect opens a Session on c (through its servers, or through addrs
// when given) and closes it when the test ends.
func connect(t *testing.T, c *zktest.Cluster, addrs []string, opts ...zr.SessionOption) *client {
	t.Helper()
	if addrs == nil {
		addrs = c.Servers()
	}
	capture := &zktest.SessionCapture{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append(append([]zr.SessionOption{zr.WithSessionTimeout(4 * time.Second), zr.WithDialer(capture.Dialer())}, wireLayer()...), opts...)
	s, err := zr.Connect(ctx, addrs, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return &client{Session: s, capture: capture, cluster: c}
}

// wireLayer turns the library's wire layer off when ZKRECIPES_WIRE=off, so
// that CI runs the contract suite both with it (the default) and without
// it (scripts/test.sh).
func wireLayer() []zr.SessionOption {
	if wireOff() {
		return []zr.SessionOption{zr.WithWireLayer(false)}
	}
	return nil
}

func wireOff() bool { return os.Getenv("ZKRECIPES_WIRE") == "off" }

// expire ends the client's ZooKeeper session from the server side.
func (c *client) expire(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.cluster.ExpireSession(ctx, c.capture))
}

// raw opens a plain go-zookeeper connection, for looking at what is on
// the server from outside the library.
func raw(t *testing.T, c *zktest.Cluster) *zk.Conn { return c.Observer(t) }

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// children lists path's children from outside (none if it does not exist).
func children(t *testing.T, conn *zk.Conn, path string) []string {
	return zktest.Children(t, conn, path)
}

// states collects a Session's state changes.
type states struct {
	ch <-chan zr.StateChange
}

func watchStates(t *testing.T, s *zr.Session) *states {
	subCtx, cancel := context.WithCancel(context.Background())
	ch, _ := s.Subscribe(subCtx)
	t.Cleanup(cancel)
	return &states{ch: ch}
}

// next waits for the next change in want, skipping others, and returns it.
func (w *states) next(t *testing.T, timeout time.Duration, want ...zr.ConnState) zr.StateChange {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case c, ok := <-w.ch:
			require.True(t, ok, "state channel closed while waiting for %v", want)
			for _, s := range want {
				if c.State == s {
					return c
				}
			}
		case <-deadline:
			t.Fatalf("no %v within %v", want, timeout)
		}
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
