package zktest

import (
	"io"
	"os"
	"time"
)

// Option configures [Start] and [StartCluster].
type Option func(*config)

type config struct {
	size         int
	sizeSet      bool
	backend      string
	tickTime     time.Duration
	logWriter    io.Writer
	startTimeout time.Duration
	jvmFlags     []string      // nil: testJVMFlags
	secure       *secureConfig // WithSecurity; nil: plain servers
	version      string        // WithServerVersion: "" (Version38) or Version39
	reconfig     bool          // WithReconfig
	spares       int           // WithReconfig: members configured, not started
	noExtTypes   bool          // WithExtendedTypes(false)
}

// testJVMFlags are the "java" backend's JVM flags unless WithJVMFlags says
// otherwise: a quick start in little memory.
var testJVMFlags = []string{"-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto", "-XX:TieredStopAtLevel=1"}

const defaultTickTime = 200 * time.Millisecond

func newConfig(opts []Option) config {
	c := config{
		size:         1,
		backend:      os.Getenv("ZK_TEST_BACKEND"),
		version:      os.Getenv("ZK_TEST_VERSION"),
		tickTime:     defaultTickTime,
		startTimeout: 90 * time.Second,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.size < 1 {
		c.size = 1
	}
	if c.tickTime < 10*time.Millisecond {
		c.tickTime = 10 * time.Millisecond
	}
	return c
}

// WithSize asks for an ensemble of n servers (quorum mode when n > 1). Optional,
// defaults to 1, a standalone server. With the "servers" backend it is the number of
// listed servers required (default: all of them).
func WithSize(n int) Option {
	return func(c *config) { c.size, c.sizeSet = n, true }
}

// WithBackend selects the backend by name: "servers", "java", "docker" (when the test
// binary imports [DockerPackage]; without it the start fails, or skips outside CI, with
// an error wrapping [ErrNoBackend] that says to import it), another name given to
// [RegisterBackend], or "" / "auto" for automatic choice. Optional, defaults to the
// environment variable ZK_TEST_BACKEND, else automatic. An unknown name makes the start
// fail.
func WithBackend(name string) Option {
	return func(c *config) { c.backend = name }
}

// WithTickTime sets ZooKeeper's tickTime. Optional, defaults to 200ms. The servers
// accept session timeouts from 2 ticks up to max(20 ticks, 60s), so with the default
// a client may ask for anything from 400ms to 60s; session expiry is checked once
// per tick. The members of an ensemble give up on a peer that answers nothing for
// max(10 ticks, 10s) (syncLimit): a stalled leader is replaced after that long. Values
// below 10ms are raised to 10ms. Ignored by the "servers" backend.
func WithTickTime(d time.Duration) Option {
	return func(c *config) { c.tickTime = d }
}

// WithLogWriter copies every server's log output to w (in addition to the log file
// the harness keeps). Optional, defaults to none: logs are only shown, tail first,
// when a test that used [Start] fails. w must be safe for concurrent use.
func WithLogWriter(w io.Writer) Option {
	return func(c *config) { c.logWriter = w }
}

// WithStartTimeout bounds how long [Start] waits for every server to serve.
// Optional, defaults to 90s.
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) { c.startTimeout = d }
}

// WithJVMFlags replaces the JVM flags the "java" backend starts each server with.
// Optional: by default they suit tests, a quick start in little memory (-Xmx256m
// -XX:+UseSerialGC -Xshare:auto -XX:TieredStopAtLevel=1; the last one stops the JIT
// at its first tier, which compiles quickly but leaves the server spending more CPU
// per request). WithJVMFlags() with no flags runs the JVM with its own defaults, as
// Debian's zookeeper package does (its JAVA_OPTS is empty): the server to measure a
// client against. -Djava.net.preferIPv4Stack=true and the harness's logging
// properties are always added. The "docker" backend starts an image whose
// entrypoint runs java (ours) with these flags in place of the -X flags it has, and
// passes them to any other image in JVMFLAGS (the official image's scripts read it).
// Ignored by the "servers" backend (it starts no server).
func WithJVMFlags(flags ...string) Option {
	return func(c *config) { c.jvmFlags = append([]string{}, flags...) }
}

// ZooKeeper versions accepted by [WithServerVersion] and ZK_TEST_VERSION.
const (
	// Version38 is Debian 12's zookeeper package (3.8.0), the default.
	Version38 = "3.8"
	// Version39 is Debian 13's ZooKeeper 3.9 jars, which scripts/deps.sh downloads
	// into the repository's .deps/zookeeper-3.9 (or ZK39_HOME, a directory holding
	// zookeeper.jar and zookeeper-jute.jar); their dependencies are Debian 12's jars
	// in /usr/share/java.
	Version39 = "3.9"
)

// WithServerVersion selects the ZooKeeper version the "java" backend starts:
// [Version38] or [Version39]. Optional, defaults to the environment variable
// ZK_TEST_VERSION, else Version38. Asking for Version39 selects the "java" backend
// (the others cannot choose a version: asking for another backend fails the start);
// when its jars are missing the start fails with an error wrapping ErrNoBackend that
// says to run scripts/deps.sh. Once the server serves, the harness checks that its
// version (the four-letter word srvr) is the one asked for.
func WithServerVersion(v string) Option {
	return func(c *config) { c.version = v }
}

// WithReconfig starts an ensemble (of [WithSize] servers, at least 2) that
// may be reconfigured: reconfigEnabled=true, the members in a dynamic
// configuration file, each with its client address there (so that
// /zookeeper/config names it), and [SuperUser] / [SuperPassword] as the
// servers' digest super user, the only identity allowed to reconfigure.
// spares more members are planned (ports, data directory, a dynamic file
// of the ensemble and themselves) but not started: they are numbered
// after the ensemble, [Cluster.Servers] lists them too, [Cluster.Restart]
// starts one, and [Cluster.ServerLine] gives the line that adds it to the
// ensemble. Optional, defaults to off (reconfigEnabled=false, no spare).
// Only the "java" backend supports it; others fail the start.
func WithReconfig(spares int) Option {
	return func(c *config) { c.reconfig, c.spares = true, max(spares, 0) }
}

// The digest super user of an ensemble started [WithReconfig]: a client
// that authenticates as it (digest "SuperUser:SuperPassword") may
// reconfigure the ensemble; any other gets NOAUTH.
const (
	SuperUser     = "super"
	SuperPassword = "zktest-super-secret"
)
