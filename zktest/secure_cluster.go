package zktest

import (
	"context"
	"path/filepath"
	"slices"
)

// WithSecurity secures every server of a [Cluster] as [StartSecure] secures
// its one server: SASL users or a JAAS text (WithSASLUsers, WithKerberos,
// WithServerJAAS), enforced SASL (WithSASLEnforced), a TLS client port each
// (WithTLS: one test PKI for the whole ensemble, see [Cluster.TLS] and
// [Cluster.TLSServers]), extra JVM flags and zoo.cfg lines. The quorum's own
// traffic (peer and election ports) stays plain and unauthenticated, on
// 127.0.0.1. WithSecureDir and WithSecureTickTime are ignored: the Cluster's
// directory and [WithTickTime] apply. A secured Cluster always runs the
// "java" backend (ZK_TEST_BACKEND, ZK_SERVERS and WithBackend are ignored:
// only servers the harness starts can be secured); [Start] skips the test
// without it (fails it when CI is set). Optional, defaults to plain servers.
func WithSecurity(opts ...SecureOption) Option {
	return func(c *config) {
		sc := &secureConfig{}
		for _, o := range opts {
			o(sc)
		}
		c.secure = sc
	}
}

// securePKI makes the test PKI of a Cluster started WithSecurity(WithTLS(...))
// in dir/pki, once for every member and start attempt; nil without TLS.
func (c *config) securePKI(dir string) (*TLSMaterial, error) {
	if c.secure == nil || !c.secure.tls {
		return nil, nil
	}
	sc := *c.secure
	sc.pkiDir = filepath.Join(dir, "pki")
	c.secure = &sc
	return makeTestPKI(sc.pkiDir, sc.certHosts...)
}

// TLS returns the test PKI of a Cluster started WithSecurity(WithTLS(...)):
// the CA its servers' certificate is signed by and a client certificate it
// accepts. It is nil without TLS.
func (c *Cluster) TLS() *TLSMaterial { return c.tls }

// TLSServers returns each server's TLS client address, "127.0.0.1:port",
// indexed like [Cluster.Servers]; nil without TLS. The slice is a fresh copy.
func (c *Cluster) TLSServers() []string { return slices.Clone(c.tlsAddrs) }

// probeTLSPort reports whether addr accepts a TCP connection: a TLS port
// opens with the plain one, and a probe tells a server that is still
// binding it.
func probeTLSPort(ctx context.Context, addr string) error {
	conn, err := dialLoopback(ctx, addr)
	if err != nil {
		return err
	}
	return conn.Close()
}
