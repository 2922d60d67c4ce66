package zktest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// SecureServer is one standalone ZooKeeper 3.8 server (the "java" backend:
// Debian's jars, or ZOOKEEPER_HOME / ZK_CLASSPATH) with SASL and/or TLS
// set up, on 127.0.0.1 with OS-chosen free ports, in a fresh directory:
// the server to test a client against a secured ensemble.
//
// With [WithSASLUsers], the server authenticates SASL DIGEST-MD5 clients
// against those users (JAAS section "Server", user_<name>="<password>"),
// registers the "sasl" ACL scheme, and, with [WithSASLEnforced], closes
// every connection that sends a request before completing SASL
// (enforce.auth.enabled=true, enforce.auth.schemes=sasl). With [WithTLS],
// it also serves a TLS port (secureClientPort, Netty) with certificates
// made at start by Go's crypto ([SecureServer.TLS]) and the "x509" ACL
// scheme. [WithServerJAAS] and [WithServerJVMFlags] replace the JAAS text
// and add JVM flags, e.g. for a Kerberos (GSSAPI) server.
//
// Methods are safe for concurrent use. Close stops the server and removes
// its directory.
type SecureServer struct {
	// Addr is the plain client port, "127.0.0.1:port".
	Addr string
	// TLSAddr is the TLS client port ("" without WithTLS).
	TLSAddr string
	// Dir is the server's directory: zoo.cfg, jaas-server.conf, data/,
	// server.log, and with TLS the PEM files of [SecureServer.TLS].
	Dir string

	tls     *TLSMaterial
	srv     *javaServer
	ownDir  bool
	closeMu sync.Mutex
	closed  bool
}

// TLSMaterial is the test PKI a TLS SecureServer made at start: a CA, the
// server's certificate (SAN IP:127.0.0.1 and DNS:localhost, unless
// WithServerCertHosts says otherwise) and a client
// certificate, all signed by the CA.
type TLSMaterial struct {
	// CAFile is the CA certificate (PEM); CA holds it as a pool.
	CAFile string
	CA     *x509.CertPool
	// ClientCert is a client certificate with its key, signed by the CA.
	ClientCert tls.Certificate
	// ClientCertFile and ClientKeyFile are the same, as PEM files.
	ClientCertFile, ClientKeyFile string
	// ClientDN is the client certificate's subject as the server names it
	// in the x509 ACL scheme (RFC 2253), e.g. "CN=zktest-client,O=zktest".
	ClientDN string
}

// ClientConfig returns a *tls.Config that trusts the server; with cert
// true it also presents ClientCert.
func (m *TLSMaterial) ClientConfig(cert bool) *tls.Config {
	c := &tls.Config{RootCAs: m.CA, MinVersion: tls.VersionTLS12}
	if cert {
		c.Certificates = []tls.Certificate{m.ClientCert}
	}
	return c
}

// ClientAuth is a TLS server's demand for client certificates
// (ZooKeeper's ssl.clientAuth).
type ClientAuth string

// ssl.clientAuth values.
const (
	ClientAuthNeed ClientAuth = "need" // a certificate signed by the CA is required (ZooKeeper's default)
	ClientAuthWant ClientAuth = "want" // a certificate is checked if shown
	ClientAuthNone ClientAuth = "none" // server-authenticated TLS only
)

// SecureOption configures [StartSecure].
type SecureOption func(*secureConfig)

type secureConfig struct {
	users      map[string]string
	enforced   bool
	tls        bool
	clientAuth ClientAuth
	jaas       string
	jvmFlags   []string
	zooCfg     []string
	dir        string
	pkiDir     string // a Cluster's PKI, shared by its members
	certHosts  []string
	tick       time.Duration
	timeout    time.Duration
}

// WithSASLUsers sets the DIGEST-MD5 users (name -> password) of the
// server's JAAS "Server" section. Optional: without it (and without
// WithServerJAAS), the server has no SASL.
func WithSASLUsers(users map[string]string) SecureOption {
	return func(c *secureConfig) { c.users = maps.Clone(users) }
}

// WithSASLEnforced makes SASL mandatory for every session
// (enforce.auth.enabled=true, enforce.auth.schemes=sasl). Optional,
// defaults to off: SASL is offered, and a session without it sees what
// world and ip ACLs allow.
func WithSASLEnforced() SecureOption {
	return func(c *secureConfig) { c.enforced = true }
}

// WithTLS adds a TLS client port (secureClientPort with Netty, PEM key and
// trust stores made at start) with ssl.clientAuth set to auth, and the
// x509 authentication provider. Optional, defaults to no TLS port.
func WithTLS(auth ClientAuth) SecureOption {
	return func(c *secureConfig) { c.tls, c.clientAuth = true, auth }
}

// WithServerCertHosts sets the hosts the server's TLS certificate is
// issued for: an IP literal becomes an IP SAN, any other host a DNS SAN.
// WithServerCertHosts("localhost") makes a certificate that a client
// verifying against 127.0.0.1 refuses, as a real ensemble's certificates,
// issued for names, are. Optional, defaults to 127.0.0.1 and localhost.
func WithServerCertHosts(hosts ...string) SecureOption {
	return func(c *secureConfig) { c.certHosts = slices.Clone(hosts) }
}

// WithServerJAAS replaces the JAAS configuration the server runs with
// (java.security.auth.login.config): e.g. a "Server" section with
// com.sun.security.auth.module.Krb5LoginModule for a GSSAPI server. A
// ZooKeeper server speaks one SASL mechanism: GSSAPI if that login yields a
// Kerberos principal, DIGEST-MD5 otherwise. Optional, defaults to the
// DIGEST-MD5 section WithSASLUsers describes.
func WithServerJAAS(text string) SecureOption {
	return func(c *secureConfig) { c.jaas = text }
}

// WithServerJVMFlags adds JVM flags to the server's command line, e.g.
// -Djava.security.krb5.conf=... or -Dzookeeper.kerberos.removeRealmFromPrincipal=true.
// Optional, defaults to none.
func WithServerJVMFlags(flags ...string) SecureOption {
	return func(c *secureConfig) { c.jvmFlags = append(c.jvmFlags, flags...) }
}

// WithZooCfg adds lines ("key=value") to the server's zoo.cfg. Optional.
func WithZooCfg(lines ...string) SecureOption {
	return func(c *secureConfig) { c.zooCfg = append(c.zooCfg, lines...) }
}

// WithSecureDir runs the server in dir (created if missing; kept on
// Close) instead of a fresh temporary directory. Optional.
func WithSecureDir(dir string) SecureOption {
	return func(c *secureConfig) { c.dir = dir }
}

// WithSecureTickTime sets tickTime. Optional, defaults to 200ms (sessions
// from 400ms to 60s).
func WithSecureTickTime(d time.Duration) SecureOption {
	return func(c *secureConfig) { c.tick = d }
}

// StartSecureServer starts a SecureServer for tb and stops it when tb
// ends. Without a Java backend it skips tb (fails it when CI is set).
func StartSecureServer(tb testing.TB, opts ...SecureOption) *SecureServer {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := StartSecure(ctx, opts...)
	if err != nil {
		if isNoBackend(err) && !inCI() {
			tb.Skip(err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("secure server log (tail):\n%s", s.LogTail(40))
		}
		_ = s.Close()
	})
	return s
}

// StartSecure starts a SecureServer and returns once it serves (the TLS
// port accepting connections too). It fails with ctx's error, or with an
// error wrapping ErrNoBackend when no Java and ZooKeeper jars are found.
func StartSecure(ctx context.Context, opts ...SecureOption) (*SecureServer, error) {
	cfg := secureConfig{tick: defaultTickTime, timeout: 90 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	b, err := newJavaBackend()
	if err != nil {
		return nil, err
	}
	s := &SecureServer{Dir: cfg.dir}
	if s.Dir == "" {
		if s.Dir, err = os.MkdirTemp("", "zktest-secure-"); err != nil {
			return nil, err
		}
		s.ownDir = true
	}
	fail := func(err error) (*SecureServer, error) {
		_ = s.Close()
		return nil, err
	}
	if cfg.tls {
		if s.tls, err = makeTestPKI(filepath.Join(s.Dir, "pki"), cfg.certHosts...); err != nil {
			return fail(err)
		}
	}
	for attempt := 0; ; attempt++ {
		err := s.launch(ctx, b, cfg)
		if err == nil {
			return s, nil
		}
		if attempt < 3 && s.srv != nil && bindClash(s.srv.logTail(200)) {
			_ = s.srv.close()
			continue
		}
		return fail(err)
	}
}

func (s *SecureServer) launch(ctx context.Context, b *javaBackend, cfg secureConfig) error {
	n := 1
	if cfg.tls {
		n = 2
	}
	ports, err := freePorts(n)
	if err != nil {
		return err
	}
	s.Addr = "127.0.0.1:" + strconv.Itoa(ports[0])
	data := filepath.Join(s.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	tlsPort := 0
	if cfg.tls {
		tlsPort = ports[1]
		s.TLSAddr = "127.0.0.1:" + strconv.Itoa(tlsPort)
	}
	extra, flags, err := cfg.serverSetup(s.Dir, filepath.Join(s.Dir, "pki"), tlsPort)
	if err != nil {
		return err
	}
	zc := zooCfg([]serverSpec{{id: 1, clientPort: ports[0]}}, 0, data, cfg.tick)
	zc += strings.Join(extra, "\n") + "\n"
	cfgPath := filepath.Join(s.Dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(zc), 0o644); err != nil {
		return err
	}
	s.srv = &javaServer{
		address: s.Addr,
		logPath: filepath.Join(s.Dir, "server.log"),
		java:    b.java,
		dir:     s.Dir,
		args: append(append(slices.Clone(testJVMFlags), flags...),
			"-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
			"-Dzookeeper.admin.enableServer=false",
			"-Dorg.slf4j.simpleLogger.showDateTime=true",
			"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
			"-cp", secureClasspath(b.classpath),
			"org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath),
	}
	if err := s.srv.start(ctx); err != nil {
		return err
	}
	return s.waitServing(ctx, cfg.timeout)
}

// serverSetup secures one server whose directory is dir, the same way for a
// SecureServer and for each member of a Cluster started WithSecurity: it
// writes dir/jaas-server.conf (when there is SASL) and returns the zoo.cfg
// lines and JVM flags that make the server use it, enforce SASL, and serve
// TLS on tlsPort (0: no TLS port) with the PEM files in pkiDir.
func (cfg secureConfig) serverSetup(dir, pkiDir string, tlsPort int) (zoo, flags []string, err error) {
	jaas := cfg.jaas
	if jaas == "" && len(cfg.users) > 0 {
		jaas = digestJAAS(cfg.users)
	}
	if jaas != "" {
		p := filepath.Join(dir, "jaas-server.conf")
		if err := os.WriteFile(p, []byte(jaas), 0o600); err != nil {
			return nil, nil, err
		}
		flags = append(flags, "-Djava.security.auth.login.config="+p)
		zoo = append(zoo, "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
	}
	flags = append(flags, cfg.jvmFlags...)
	if cfg.enforced {
		zoo = append(zoo, "enforce.auth.enabled=true", "enforce.auth.schemes=sasl")
	}
	if tlsPort != 0 {
		zoo = append(zoo,
			"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
			"secureClientPort="+strconv.Itoa(tlsPort),
			"secureClientPortAddress=127.0.0.1",
			"ssl.keyStore.location="+filepath.Join(pkiDir, "server.pem"),
			"ssl.keyStore.type=PEM",
			"ssl.trustStore.location="+filepath.Join(pkiDir, "ca.pem"),
			"ssl.trustStore.type=PEM",
			"ssl.clientAuth="+string(cfg.clientAuth),
			"authProvider.2=org.apache.zookeeper.server.auth.X509AuthenticationProvider",
		)
	}
	return append(zoo, cfg.zooCfg...), flags, nil
}

// secureClasspath adds the Netty jars a TLS port needs that Debian's
// zookeeper.jar manifest does not name.
func secureClasspath(cp string) string {
	for _, j := range []string{"netty-codec", "netty-resolver", "netty-transport-native-unix-common"} {
		p := "/usr/share/java/" + j + ".jar"
		if _, err := os.Stat(p); err == nil && !strings.Contains(cp, p) {
			cp += string(os.PathListSeparator) + p
		}
	}
	return cp
}

func (s *SecureServer) waitServing(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		select {
		case <-s.srv.exited():
			return fmt.Errorf("zktest: secure server exited at start; log:\n%s", s.srv.logTail(30))
		default:
		}
		if _, last = Srvr(ctx, s.Addr); last == nil {
			if s.TLSAddr == "" {
				return nil
			}
			c, err := dialLoopback(ctx, s.TLSAddr)
			if err == nil {
				_ = c.Close()
				return nil
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zktest: secure server not serving: %w (last: %v); log:\n%s", ctx.Err(), last, s.srv.logTail(30))
		case <-time.After(50 * time.Millisecond): // polls the server; orders nothing
		}
	}
}

// TLS returns the TLS material of a server started WithTLS (nil otherwise).
func (s *SecureServer) TLS() *TLSMaterial { return s.tls }

// Restart kills the server and starts it again on the same directory and
// ports, returning once it serves: sessions whose timeout outlasts the
// restart survive it, and their clients reconnect (and must authenticate
// again).
func (s *SecureServer) Restart(ctx context.Context) error {
	if err := s.srv.kill(); err != nil {
		return err
	}
	if err := s.srv.start(ctx); err != nil {
		return err
	}
	return s.waitServing(ctx, 90*time.Second)
}

// Kill stops the server process at once (SIGKILL); Start runs it again.
func (s *SecureServer) Kill() error { return s.srv.kill() }

// Start starts a killed server again on the same directory and ports and
// returns once it serves.
func (s *SecureServer) Start(ctx context.Context) error {
	if err := s.srv.start(ctx); err != nil {
		return err
	}
	return s.waitServing(ctx, 90*time.Second)
}

// LogTail returns up to n of the last lines of the server's log.
func (s *SecureServer) LogTail(n int) string {
	if s.srv == nil {
		return ""
	}
	return s.srv.logTail(n)
}

// Close stops the server and removes its directory (unless it was given
// with WithSecureDir). It is idempotent.
func (s *SecureServer) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.srv != nil {
		err = s.srv.close()
	}
	if s.ownDir {
		err = errors.Join(err, os.RemoveAll(s.Dir))
	}
	return err
}

// SetSASLUsers rewrites the DIGEST-MD5 users of the server's JAAS file
// (name -> password; e.g. a rotated password); the server reads it at its
// next Restart or Start. It fails for a server started WithServerJAAS or
// without WithSASLUsers.
func (s *SecureServer) SetSASLUsers(users map[string]string) error {
	p := filepath.Join(s.Dir, "jaas-server.conf")
	old, err := os.ReadFile(p)
	if err != nil || !strings.Contains(string(old), "DigestLoginModule") {
		return fmt.Errorf("zktest: server has no DIGEST-MD5 users to replace (%v)", err)
	}
	return os.WriteFile(p, []byte(digestJAAS(users)), 0o600)
}

// SetServerJAAS replaces the server's JAAS configuration with text (""
// leaves it with no Server section: no SASL); the server reads it at its
// next Restart or Start. It fails for a server started with no JAAS
// configuration (neither WithSASLUsers nor WithServerJAAS).
func (s *SecureServer) SetServerJAAS(text string) error {
	p := filepath.Join(s.Dir, "jaas-server.conf")
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("zktest: server has no JAAS configuration to replace: %w", err)
	}
	if text == "" {
		text = "// no Server section: no SASL\n"
	}
	return os.WriteFile(p, []byte(text), 0o600)
}

func digestJAAS(users map[string]string) string {
	var e strings.Builder
	e.WriteString("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required")
	for _, u := range slices.Sorted(maps.Keys(users)) {
		fmt.Fprintf(&e, "\n  user_%s=%q", u, users[u])
	}
	e.WriteString(";\n};\n")
	return e.String()
}
