package kerberos_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/kerberos"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const refuseBound = 15 * time.Second // a refused client is told within this, on a loaded machine

// mech returns the GSSAPI mechanism logging in as principal with keytab,
// for the test server's zookeeper/localhost, closed when the test ends.
func mech(t *testing.T, principal, keytab string, opts ...kerberos.Option) *kerberos.Mechanism {
	t.Helper()
	k, _ := setup(t)
	opts = append([]kerberos.Option{kerberos.WithConfigFile(k.ConfigPath),
		kerberos.WithKeytab(principal, keytab), kerberos.WithServiceHost("localhost")}, opts...)
	m, err := kerberos.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func connect(t *testing.T, addr string, opts ...zr.SessionOption) *zr.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zr.Connect(ctx, []string{addr}, append([]zr.SessionOption{zr.WithSessionTimeout(10 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testPath is a top-level path of the test's own: a recipe creates its
// parents with its Session's ACL, so tests of other principals must not
// share one.
func testPath(t *testing.T) string {
	return "/krb_" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
}

// A Session authenticated by Kerberos holds a lock whose nodes carry a sasl:
// ACL naming its principal; another principal can neither read the queue
// nor take the lock, and is told so at once.
func TestKerberosSessionHoldsLockUnderSASLACL(t *testing.T) {
	k, srv := setup(t)
	alice := mech(t, "alice", k.Keytab("alice"))
	bob := mech(t, "bob", k.Keytab("bob"))
	require.Equal(t, "alice@"+zktestRealm, alice.Principal())

	a := connect(t, srv.Addr, zr.WithSASL(alice), zr.WithACL([]zr.ACL{zr.SASLACL(alice.Principal(), zr.PermAll)}))
	b := connect(t, srv.Addr, zr.WithSASL(bob))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	p := testPath(t)
	lease, err := zr.NewMutex(a, p).Acquire(ctx)
	require.NoError(t, err)
	acl, _, err := a.Conn().GetACL(p)
	require.NoError(t, err)
	require.Equal(t, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "alice@" + zktestRealm}}, acl)

	_, err = zr.NewMutex(b, p).TryAcquire(ctx)
	require.ErrorIs(t, err, zk.ErrNoAuth)
	_, _, err = b.Conn().Children(p)
	require.ErrorIs(t, err, zk.ErrNoAuth)

	require.NoError(t, lease.Err())
	require.NoError(t, lease.Release(ctx))
}

// A keytab that does not hold the principal's current key ends Connect at
// once with kerberos.ErrLogin (which matches zkrecipes.ErrAuthFailed), after
// one dial: no redial loop, no wait for ctx.
func TestKerberosWrongKeytabFailsConnectWithErrLoginOnce(t *testing.T) {
	k, srv := setup(t)
	// carol's key rotated after her keytab was copied: the KDC refuses the
	// old key (pre-authentication fails).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kt, err := k.AddPrincipal(ctx, "carol")
	require.NoError(t, err)
	old := filepath.Join(t.TempDir(), "carol-old.keytab")
	b, err := os.ReadFile(kt)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(old, b, 0o600))
	_, err = k.Rekey(ctx, "carol")
	require.NoError(t, err)
	for name, m := range map[string]*kerberos.Mechanism{
		"another principal's keytab": mech(t, "alice", k.Keytab("bob")),
		"unknown principal":          mech(t, "mallory", k.Keytab("alice")),
		"stale keytab":               mech(t, "carol", old),
	} {
		t.Run(name, func(t *testing.T) {
			var dials int
			dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
				dials++ // go-zookeeper dials from one goroutine
				return net.DialTimeout(network, address, timeout)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			s, err := zr.Connect(ctx, []string{srv.Addr}, zr.WithSASL(m), zr.WithDialer(dial))
			if err == nil {
				_ = s.Close()
			}
			t.Logf("Connect: %v", err)
			require.ErrorIs(t, err, kerberos.ErrLogin)
			require.ErrorIs(t, err, zr.ErrAuthFailed)
			require.Less(t, time.Since(start), refuseBound)
			require.Equal(t, 1, dials, "no redial after the KDC refused the credentials")
		})
	}
}

// A service principal the server does not hold (the host part wrong) is
// refused with ErrServiceTicket, matching zkrecipes.ErrAuthFailed.
func TestKerberosWrongServiceHostFailsConnectWithErrServiceTicket(t *testing.T) {
	k, srv := setup(t)
	m := mech(t, "alice", k.Keytab("alice"), kerberos.WithServiceHost("zk9.elsewhere.test"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zr.Connect(ctx, []string{srv.Addr}, zr.WithSASL(m))
	if err == nil {
		_ = s.Close()
	}
	require.ErrorIs(t, err, kerberos.ErrServiceTicket)
	require.ErrorIs(t, err, zr.ErrAuthFailed)
	require.NoError(t, ctx.Err())
}

// The server restarts under a connected Session (whose session outlives the
// restart): the Session reconnects to the same ZooKeeper session, runs the
// GSSAPI exchange again on the new connection (the enforcing server would
// close it on its first request otherwise) and reads a node only its
// principal may read.
func TestKerberosSessionReauthenticatesAfterServerRestart(t *testing.T) {
	k, srv := setup(t)
	alice := mech(t, "alice", k.Keytab("alice"))
	counted := &countingMech{SASLMechanism: alice}
	s := connect(t, srv.Addr, zr.WithSASL(counted), zr.WithSessionTimeout(20*time.Second),
		zr.WithACL([]zr.ACL{zr.SASLACL(alice.Principal(), zr.PermAll)}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p := testPath(t)
	_, err := s.Conn().Create(p, []byte("only alice"), zk.FlagEphemeral, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: alice.Principal()}})
	require.NoError(t, err)
	before := s.Conn().SessionID()

	require.NoError(t, srv.Restart(ctx))

	require.Eventually(t, func() bool {
		data, _, err := s.Conn().Get(p)
		return err == nil && string(data) == "only alice"
	}, 30*time.Second, 50*time.Millisecond, "the node is readable again, by alice's re-authenticated connection")
	require.Equal(t, before, s.Conn().SessionID(), "the same session, resumed")
	require.NotEqual(t, zr.StateLost, s.State())
	require.GreaterOrEqual(t, counted.starts.Load(), int32(2), "an exchange per connection")
}

// countingMech counts the exchanges a Session starts.
type countingMech struct {
	zr.SASLMechanism
	starts atomic.Int32
}

func (c *countingMech) Start(ctx context.Context, server string) (zr.SASLClient, []byte, error) {
	c.starts.Add(1)
	return c.SASLMechanism.Start(ctx, server)
}

// Kerberos inside TLS with a client certificate, on a server that requires
// both: the Session holds the lock under its sasl: id, and also holds the
// certificate's x509: id (a node granted to that id alone is readable).
func TestKerberosOverTLSWithClientCertificate(t *testing.T) {
	k, _ := setup(t)
	srv := zktest.StartSecureServer(t, zktest.WithKerberos(k), zktest.WithSASLEnforced(), zktest.WithTLS(zktest.ClientAuthNeed))
	alice := mech(t, "alice", k.Keytab("alice"))
	s := connect(t, srv.TLSAddr, zr.WithTLS(srv.TLS().ClientConfig(true)), zr.WithSASL(alice),
		zr.WithACL([]zr.ACL{zr.SASLACL(alice.Principal(), zr.PermAll)}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := testPath(t)
	lease, err := zr.NewMutex(s, p).Acquire(ctx)
	require.NoError(t, err)
	_, err = s.Conn().Create(p+"-x509", []byte("cert"), zk.FlagEphemeral, []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: srv.TLS().ClientDN}})
	require.NoError(t, err)
	data, _, err := s.Conn().Get(p + "-x509")
	require.NoError(t, err)
	require.Equal(t, "cert", string(data))
	require.NoError(t, lease.Release(ctx))
}

// A credential cache left by MIT's kinit logs the Session in, as a user's
// shell session would after kinit.
func TestKerberosSessionFromKinitCredentialCache(t *testing.T) {
	k, srv := setup(t)
	kinit, err := exec.LookPath("kinit")
	require.NoError(t, err, "kinit (krb5-user) is installed by scripts/deps.sh")
	ccache := filepath.Join(t.TempDir(), "ccache")
	cmd := exec.Command(kinit, "-k", "-t", k.Keytab("bob"), "-c", "FILE:"+ccache, "bob@"+zktestRealm)
	cmd.Env = append(os.Environ(), "KRB5_CONFIG="+k.ConfigPath)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	t.Setenv("KRB5CCNAME", "FILE:"+ccache)
	m, err := kerberos.New(kerberos.WithConfigFile(k.ConfigPath), kerberos.WithServiceHost("localhost"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.Equal(t, "bob@"+zktestRealm, m.Principal())
	s := connect(t, srv.Addr, zr.WithSASL(m), zr.WithACL([]zr.ACL{zr.SASLACL(m.Principal(), zr.PermAll)}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lease, err := zr.NewMutex(s, testPath(t)).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
}

// A Kerberos Session against a DIGEST-MD5 server is told the server speaks
// another mechanism, once.
func TestKerberosAgainstDigestServerFailsWithErrSASLMechanism(t *testing.T) {
	k, _ := setup(t)
	srv := zktest.StartSecureServer(t, zktest.WithSASLUsers(map[string]string{"alice": "alice-secret"}), zktest.WithSASLEnforced())
	m := mech(t, "alice", k.Keytab("alice"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zr.Connect(ctx, []string{srv.Addr}, zr.WithSASL(m))
	if err == nil {
		_ = s.Close()
	}
	t.Logf("Connect: %v", err)
	require.ErrorIs(t, err, zr.ErrSASLMechanism)
	require.NoError(t, ctx.Err())
}
