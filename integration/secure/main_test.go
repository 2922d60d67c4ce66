// Package secure_test runs zkrecipes against secured ZooKeeper servers
// (SASL DIGEST-MD5 enforced, TLS with client certificates) started by
// zktest.StartSecure: every test here talks to a real server.
package secure_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

var users = map[string]string{"alice": "alice-secret", "bob": "bob-secret"}

// shared servers, each started on first use and stopped after the suite.
type lazyServer struct {
	once sync.Once
	opts []zktest.SecureOption
	s    *zktest.SecureServer
	err  error
}

var (
	enforced = &lazyServer{opts: []zktest.SecureOption{zktest.WithSASLUsers(users), zktest.WithSASLEnforced()}}
	// tlsNeed also serves SASL (optional) on its plain and TLS ports.
	tlsNeed = &lazyServer{opts: []zktest.SecureOption{zktest.WithSASLUsers(users), zktest.WithTLS(zktest.ClientAuthNeed)}}
	noSASL  = &lazyServer{}
)

func (l *lazyServer) get(t *testing.T) *zktest.SecureServer {
	t.Helper()
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		l.s, l.err = zktest.StartSecure(ctx, l.opts...)
	})
	if l.err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no secured ZooKeeper: %v", l.err)
		}
		t.Skipf("no secured ZooKeeper: %v", l.err)
	}
	return l.s
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, l := range []*lazyServer{enforced, tlsNeed, noSASL} {
		if l.s != nil {
			_ = l.s.Close()
		}
	}
	if securedEnsemble.c != nil {
		_ = securedEnsemble.c.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left after the suite: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func testPath(t *testing.T) string { return "/t/" + unsafe.ReplaceAllString(t.Name(), "_") }

// wireLayer turns the library's wire layer off when ZKRECIPES_WIRE=off.
func wireLayer() []zr.SessionOption {
	if os.Getenv("ZKRECIPES_WIRE") == "off" {
		return []zr.SessionOption{zr.WithWireLayer(false)}
	}
	return nil
}

// connect opens a Session to addr and closes it when the test ends.
func connect(t *testing.T, addr string, opts ...zr.SessionOption) *zr.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append(append([]zr.SessionOption{zr.WithSessionTimeout(10 * time.Second)}, wireLayer()...), opts...)
	s, err := zr.Connect(ctx, []string{addr}, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// connectErr opens a Session that must fail, and returns the error and
// how long Connect took.
func connectErr(t *testing.T, addr string, opts ...zr.SessionOption) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append(append([]zr.SessionOption{zr.WithSessionTimeout(10 * time.Second)}, wireLayer()...), opts...)
	start := time.Now()
	s, err := zr.Connect(ctx, []string{addr}, opts...)
	if err == nil {
		_ = s.Close()
	}
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "Connect must fail by itself, not wait for ctx: %v", err)
	return time.Since(start), err
}
