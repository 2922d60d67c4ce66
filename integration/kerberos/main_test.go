// Package kerberos_test runs the Kerberos (SASL GSSAPI) mechanism against a
// real MIT KDC and a real ZooKeeper server that enforces SASL, both on
// 127.0.0.1 and started by zktest. It is a module of its own so that the
// Kerberos library stays out of the integration module, and it runs as its
// own stage of scripts/test.sh.
package kerberos_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

// env is the KDC and the GSSAPI server the tests share.
var (
	kdc    *zktest.KDC
	server *zktest.SecureServer
	envErr error
)

func TestMain(m *testing.M) {
	code := run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left after the suite: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kdc, envErr = zktest.NewKDC(ctx)
	if envErr == nil {
		defer kdc.Close()
		for _, p := range []string{"alice", "bob"} {
			if _, envErr = kdc.AddPrincipal(ctx, p); envErr != nil {
				break
			}
		}
	}
	if envErr == nil {
		server, envErr = zktest.StartSecure(ctx, zktest.WithKerberos(kdc), zktest.WithSASLEnforced())
		if envErr == nil {
			defer server.Close()
		}
	}
	return m.Run()
}

// setup returns the shared KDC and server, skipping the test (failing it
// under CI) when they could not be started.
func setup(t *testing.T) (*zktest.KDC, *zktest.SecureServer) {
	t.Helper()
	if envErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Kerberos test set-up: %v", envErr)
		}
		t.Skipf("no Kerberos test set-up: %v", envErr)
	}
	return kdc, server
}

const zktestRealm = zktest.KDCRealm
