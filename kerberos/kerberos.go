// Package kerberos is the SASL GSSAPI (Kerberos V5) mechanism for zkrecipes
// sessions: pass the value New returns to zkrecipes.WithSASL, and every
// connection of the Session, to any server of the ensemble and again after
// every reconnect, authenticates as the client principal before any other
// request. The server then knows the connection as sasl:<principal> (or
// sasl:<name> when it strips the realm), the id to put in ACLs.
//
// It lives in a module of its own so that the core module does not depend on
// a Kerberos library; it is built on github.com/jcmturner/gokrb5/v8, pure Go,
// no cgo and no system Kerberos library.
//
// What is verified: the KDC's replies (by gokrb5), the server's AP-REP
// (mutual authentication: only a holder of the service principal's key can
// produce it) and the integrity checksum of the server's security-layer offer.
// What is not provided: a SASL security layer. The exchange chooses "no
// security layer", as ZooKeeper's own clients do, so the traffic after it is
// neither signed nor encrypted; use TLS (zkrecipes.WithTLS) where the network
// is not trusted.
package kerberos

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// Mechanism is the GSSAPI SASL mechanism; it implements zkrecipes.SASLMechanism.
// It logs in to the KDC on first use and keeps the ticket-granting ticket
// (renewed by gokrb5 while it can be) and the service tickets for later
// connections. A Mechanism is safe for concurrent use and may be shared by
// several Sessions.
type Mechanism struct {
	cfg       mechConfig
	principal string // user@REALM, the authorization id sent to the server
	krbConf   *config.Config

	mu     sync.Mutex
	cl     *client.Client
	ccache *credentials.CCache // set when logging in from a credential cache
	kt     *keytab.Keytab      // set when logging in with a keytab
	user   string
	realm  string
}

// Option configures New.
type Option func(*mechConfig)

type mechConfig struct {
	keytabPath   string
	principal    string
	ccachePath   string
	krb5Conf     string
	serviceName  string
	serviceHost  string
	canonicalize bool
	resolver     *net.Resolver
}

// WithKeytab logs in as principal ("user@REALM", or "user" in krb5.conf's
// default_realm) with the key in the keytab file at path. Optional: without it
// (and without WithCredentialCache) New uses the credential cache that
// KRB5CCNAME names, else /tmp/krb5cc_<uid>, as a kinit before would have left
// it. A keytab login is renewed and redone as needed for as long as the
// Mechanism is used; a credential cache is not (see WithCredentialCache).
func WithKeytab(principal, path string) Option {
	return func(c *mechConfig) { c.principal, c.keytabPath = principal, path }
}

// WithCredentialCache logs in with the ticket-granting ticket in the MIT
// credential cache file at path (as left by kinit; a "FILE:" prefix is
// accepted). Optional, defaults to KRB5CCNAME, else /tmp/krb5cc_<uid>, when no
// keytab is given. The cache is read once, by New: when its ticket expires,
// connections fail with ErrLogin until a new Mechanism is made from a fresh
// cache.
func WithCredentialCache(path string) Option {
	return func(c *mechConfig) { c.ccachePath = path }
}

// WithConfigFile reads the Kerberos configuration (realms, KDC addresses,
// encryption types) from the krb5.conf file at path. Optional, defaults to
// the file KRB5_CONFIG names, else /etc/krb5.conf.
func WithConfigFile(path string) Option {
	return func(c *mechConfig) { c.krb5Conf = path }
}

// WithServiceName sets the service part of the server's principal. Optional,
// defaults to "zookeeper", as the Java client's zookeeper.sasl.client.username.
func WithServiceName(name string) Option {
	return func(c *mechConfig) { c.serviceName = name }
}

// WithServiceHost sets the host part of the server's principal for every
// server. Optional: by default it is the host of the address dialled, as
// given in the connect string (after WithCanonicalHostname, if set), so that
// each server of an ensemble is asked for under its own
// zookeeper/<host> principal, as kazoo does. Use it when all servers share one
// principal, as a test set-up on 127.0.0.1 with zookeeper/localhost does.
func WithServiceHost(host string) Option {
	return func(c *mechConfig) { c.serviceHost = host }
}

// WithCanonicalHostname makes the host part of the server's principal the
// canonical name of the dialled address, as the Java client does by default
// (zookeeper.sasl.client.canonicalize.hostname): the address is resolved and
// the first name its reverse lookup gives is used; when that fails, the host
// as given. So "127.0.0.1" usually becomes "localhost". Optional, defaults to
// off (the host as given; no DNS lookup). Ignored when WithServiceHost is set.
func WithCanonicalHostname() Option {
	return func(c *mechConfig) { c.canonicalize = true }
}

// New returns the GSSAPI mechanism for the given options. It reads the
// keytab or credential cache and krb5.conf now, and fails with ErrConfig when
// one cannot be read or is incomplete; it does not contact the KDC (the first
// connection does).
func New(opts ...Option) (*Mechanism, error) {
	c := mechConfig{serviceName: "zookeeper", resolver: net.DefaultResolver}
	for _, o := range opts {
		o(&c)
	}
	if c.serviceName == "" || strings.ContainsAny(c.serviceName, "/@") {
		return nil, fmt.Errorf("%w: service name %q", ErrConfig, c.serviceName)
	}
	if strings.ContainsAny(c.serviceHost, "/@") {
		return nil, fmt.Errorf("%w: service host %q", ErrConfig, c.serviceHost)
	}
	confPath := c.krb5Conf
	if confPath == "" {
		confPath = os.Getenv("KRB5_CONFIG")
	}
	if confPath == "" {
		confPath = "/etc/krb5.conf"
	}
	krbConf, err := config.Load(confPath)
	if err != nil {
		return nil, fmt.Errorf("%w: krb5.conf %s: %v", ErrConfig, confPath, err)
	}
	m := &Mechanism{cfg: c, krbConf: krbConf}
	switch {
	case c.keytabPath != "":
		if c.principal == "" {
			return nil, fmt.Errorf("%w: a keytab needs a principal", ErrConfig)
		}
		kt, err := keytab.Load(c.keytabPath)
		if err != nil {
			return nil, fmt.Errorf("%w: keytab %s: %v", ErrConfig, c.keytabPath, err)
		}
		user, realm, ok := strings.Cut(c.principal, "@")
		if !ok {
			realm = krbConf.LibDefaults.DefaultRealm
		}
		if user == "" || realm == "" || strings.Contains(realm, "@") {
			return nil, fmt.Errorf("%w: principal %q (and no default_realm in krb5.conf)", ErrConfig, c.principal)
		}
		m.kt, m.user, m.realm = kt, user, realm
	default:
		path := c.ccachePath
		if path == "" {
			path = os.Getenv("KRB5CCNAME")
		}
		if path == "" {
			path = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
		}
		path = strings.TrimPrefix(path, "FILE:")
		cc, err := credentials.LoadCCache(path)
		if err != nil {
			return nil, fmt.Errorf("%w: credential cache %s (run kinit, or use WithKeytab): %v", ErrConfig, path, err)
		}
		m.ccache = cc
		pn := cc.GetClientPrincipalName()
		m.user, m.realm = pn.PrincipalNameString(), cc.GetClientRealm()
	}
	m.principal = m.user + "@" + m.realm
	return m, nil
}

// Name returns "GSSAPI".
func (m *Mechanism) Name() string { return "GSSAPI" }

// Principal returns the client principal, user@REALM: the authorization id
// the server is asked for, and the id of sasl: ACL entries unless the server
// strips the realm (kerberos.removeRealmFromPrincipal).
func (m *Mechanism) Principal() string { return m.principal }

// ServicePrincipal returns the service principal (without realm) that a
// connection to server ("host:port") authenticates to: the service name, a
// slash, and the service host (see WithServiceHost and WithCanonicalHostname).
func (m *Mechanism) ServicePrincipal(ctx context.Context, server string) (string, error) {
	host := m.cfg.serviceHost
	if host == "" {
		h, _, err := net.SplitHostPort(server)
		if err != nil {
			h = server
		}
		host = h
		if m.cfg.canonicalize {
			host = canonicalHost(ctx, m.cfg.resolver, host)
		}
	}
	if host == "" {
		return "", fmt.Errorf("%w: no host in server address %q", ErrConfig, server)
	}
	return m.cfg.serviceName + "/" + host, nil
}

// canonicalHost returns the name the reverse lookup of host's first address
// gives, without its trailing dot, or host when there is none.
func canonicalHost(ctx context.Context, r *net.Resolver, host string) string {
	addrs, err := r.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return host
	}
	names, err := r.LookupAddr(ctx, addrs[0])
	if err != nil || len(names) == 0 {
		return host
	}
	if n := strings.TrimSuffix(names[0], "."); n != "" {
		return strings.ToLower(n)
	}
	return host
}

// Close forgets the tickets and stops the background renewal of the
// ticket-granting ticket (a goroutine gokrb5 runs after a keytab login). Call
// it once the Sessions using m are closed; a connection started afterwards
// logs in afresh. It always returns nil.
func (m *Mechanism) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cl != nil {
		m.cl.Destroy()
		m.cl = nil
	}
	return nil
}

// login returns the logged-in client, logging in on first use.
func (m *Mechanism) login() (*client.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cl == nil {
		if m.kt != nil {
			m.cl = client.NewWithKeytab(m.user, m.realm, m.kt, m.krbConf, client.DisablePAFXFAST(true))
		} else {
			cl, err := client.NewFromCCache(m.ccache, m.krbConf, client.DisablePAFXFAST(true))
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrLogin, err)
			}
			m.cl = cl
		}
	}
	// AffirmLogin logs in when no valid TGT is held; with a keytab it
	// renews or repeats the AS exchange as needed.
	if err := m.cl.AffirmLogin(); err != nil {
		if m.kt != nil {
			// A failed keytab login leaves no session; start afresh next time.
			m.cl.Destroy()
			m.cl = nil
		}
		return nil, fmt.Errorf("%w as %s: %v", kdcError(ErrLogin, err), m.principal, err)
	}
	return m.cl, nil
}

// errCtx returns ctx's error, wrapped so that callers see what was cut.
func errCtx(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("zkrecipes/kerberos: %s: %w", what, err)
	}
	return nil
}
