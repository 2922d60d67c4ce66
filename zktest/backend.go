package zktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Backend names accepted by [WithBackend] and ZK_TEST_BACKEND. BackendDocker is
// available when the test binary imports [DockerPackage].
const (
	BackendServers = "servers"
	BackendJava    = "java"
	BackendDocker  = "docker"
)

// backend launches servers for one cluster.
type backend interface {
	name() string
	// launch creates and starts the processes of an ensemble described by specs. It
	// does not wait until they serve. On error it releases what it started.
	launch(ctx context.Context, dir string, specs []serverSpec, cfg config) ([]member, error)
}

// member is one server of a cluster. Methods are safe for concurrent use.
type member interface {
	addr() string
	// start starts the process again after kill (same data and ports).
	start(ctx context.Context) error
	kill() error
	stop() error
	cont() error
	// exited is closed when the current process has ended; nil when unknown.
	exited() <-chan struct{}
	// logTail returns up to n of the last lines of the server's log.
	logTail(n int) string
	close() error
}

// selectBackend resolves the configured backend name to a backend, or returns an
// error wrapping ErrNoBackend that explains what to install.
func selectBackend(ctx context.Context, cfg config) (backend, error) {
	v, err := cfg.serverVersion()
	if err != nil {
		return nil, err
	}
	if v == Version39 {
		if b := strings.ToLower(strings.TrimSpace(cfg.backend)); b != "" && b != "auto" && b != BackendJava {
			return nil, fmt.Errorf("zktest: ZooKeeper %s runs on the %s backend only, not %q", v, BackendJava, cfg.backend)
		}
		return newJavaBackendVersion(v)
	}
	if cfg.secure != nil {
		return newJavaBackend() // only servers we start can be secured
	}
	name := strings.ToLower(strings.TrimSpace(cfg.backend))
	switch name {
	case BackendServers:
		return newServersBackend(cfg)
	case BackendJava:
		return newJavaBackend()
	case "", "auto":
	default:
		if open, ok := registered(name); ok {
			return openRegistered(ctx, name, open)
		}
		if name == BackendDocker {
			return nil, unavailable("docker backend: not linked into this test binary; import _ %q (a module of its own) in one of the package's test files", DockerPackage)
		}
		return nil, fmt.Errorf("zktest: unknown backend %q (want %s, %s or one registered with RegisterBackend: %s)",
			cfg.backend, BackendServers, BackendJava, strings.Join(registeredNames(), ", "))
	}
	if serversConfigured() {
		return newServersBackend(cfg)
	}
	var reasons []string
	b, err := newJavaBackend()
	if err == nil {
		return b, nil
	}
	reasons = append(reasons, err.Error())
	for _, name := range registeredNames() {
		open, _ := registered(name)
		b, err := openRegistered(ctx, name, open)
		if err == nil {
			return b, nil
		}
		if !isNoBackend(err) {
			return nil, err
		}
		reasons = append(reasons, err.Error())
	}
	return nil, fmt.Errorf("%w\n  %s\n%s", ErrNoBackend, strings.Join(reasons, "\n  "), installHint)
}

// DefaultImage is the image the docker backend ([DockerPackage]) runs unless
// ZK_TEST_IMAGE names another: the official Docker Hub ZooKeeper image. CI builds and
// uses zkrecipes/zookeeper:3.8-debian offline (integration/docker/build-image.sh).
const DefaultImage = "zookeeper"

// DockerPackage is the import path of the Docker backend, in a module of its own: a
// test binary that imports it (for its side effect, with _) can run its servers in
// Docker containers ([BackendDocker]).
const DockerPackage = "github.com/zkrecipes/zkrecipes/zktest/docker"

const installHint = `To run these tests, do one of:
  - Debian/Ubuntu: apt-get install zookeeper default-jre-headless (or run scripts/deps.sh)
  - any OS: install a JDK 11+ and unpack Apache ZooKeeper, then set ZOOKEEPER_HOME (or ZK_CLASSPATH) and JAVA_HOME (or ZK_JAVA)
  - run a Docker engine and import _ "github.com/zkrecipes/zkrecipes/zktest/docker" in a test file; image ZK_TEST_IMAGE (default "zookeeper"; integration/docker/build-image.sh builds zkrecipes/zookeeper:3.8-debian offline)
  - point ZK_SERVERS at a running ensemble on loopback, e.g. ZK_SERVERS=127.0.0.1:2181
See https://github.com/zkrecipes/zkrecipes/blob/main/zktest/README.md.`

// unavailable wraps ErrNoBackend with the reason one backend cannot run.
func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNoBackend, fmt.Sprintf(format, args...))
}

// isNoBackend reports whether err means "no backend", as opposed to a broken one.
func isNoBackend(err error) bool { return errors.Is(err, ErrNoBackend) }

// serverVersion returns the version asked for, normalised: Version38 or Version39.
func (c config) serverVersion() (string, error) {
	switch v := strings.TrimSpace(c.version); v {
	case "", Version38, "3.8.0":
		return Version38, nil
	case Version39:
		return Version39, nil
	default:
		return "", fmt.Errorf("zktest: unknown ZooKeeper version %q (want %s or %s)", c.version, Version38, Version39)
	}
}
