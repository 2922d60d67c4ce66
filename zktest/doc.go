// Package zktest starts real Apache ZooKeeper servers for tests and demos: the Go
// counterpart of curator-test's TestingServer, TestingCluster and KillSession.
//
// [Start] gives a test a standalone server or an ensemble, stopped by tb.Cleanup even
// when the test fails. A backend is chosen in this order unless [WithBackend] or the
// environment variable ZK_TEST_BACKEND names one:
//
//   - "servers": an existing ensemble listed in ZK_SERVERS (loopback addresses only);
//     lifecycle faults (Kill, Restart, Stop, Cont) return [ErrUnsupported];
//   - "java": a local JVM per server (java from ZK_JAVA, JAVA_HOME or PATH; jars from
//     ZK_CLASSPATH, ZOOKEEPER_HOME or Debian's /usr/share/java/zookeeper.jar; with
//     [WithServerVersion] or ZK_TEST_VERSION=3.9, ZooKeeper 3.9 from the jars
//     scripts/deps.sh keeps in .deps/zookeeper-3.9);
//   - "docker": one container per server through testcontainers-go on the host
//     network (image from ZK_TEST_IMAGE, default "zookeeper"), when the test binary
//     imports the Docker backend ([DockerPackage]), a module of its own.
//
// This module's packages import only go-zookeeper (its own tests add testify and
// goleak): a test that wants no Docker never downloads testcontainers. One that does imports the Docker backend for its side effect, in any
// of the package's test files:
//
//	import _ "github.com/zkrecipes/zkrecipes/zktest/docker"
//
// The harness was github.com/zkrecipes/zkrecipes/integration/zktest, with the Docker
// backend built in. Moving from there: change the import path; a test binary that asks
// for "docker" adds the import above (without it, the start says to). Other backends
// plug in the same way, with [RegisterBackend].
//
// When no backend is available, [Start] skips the test with a message that says what
// to install, or fails it when the environment variable CI is set.
//
// Every server listens on 127.0.0.1 only, on ports the operating system picked, and
// every client in this package dials 127.0.0.0/8 only: non-loopback addresses are
// refused with [ErrNotLoopback].
//
// Faults: [Cluster.Kill], [Cluster.Restart], [Cluster.Stop] and [Cluster.Cont] act on
// server processes; [ExpireSession] with a [SessionCapture] expires a client's session
// from the server side; [Proxy] black-holes, delays or resets TCP traffic, or lets
// requests through while it loses the server's replies, then resets the connection.
package zktest
