package zktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every member of a secured ensemble gets its own TLS port, distinct from
// every client, peer and election port.
func TestPlanPortsGivesEachMemberItsOwnTLSPort(t *testing.T) {
	specs, err := planPorts(3, true)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, s := range specs {
		for _, p := range []int{s.clientPort, s.peerPort, s.electPort, s.tlsPort} {
			require.NotZero(t, p)
			require.False(t, seen[p], "port %d planned twice", p)
			seen[p] = true
		}
	}
}

// WithSecurity secures a member as StartSecure secures its server: JAAS
// file in the member's directory, SASL enforced, TLS on its own port with
// the Cluster's PKI.
func TestWithSecuritySecuresEachMemberLikeStartSecure(t *testing.T) {
	cfg := newConfig([]Option{WithSize(3), WithSecurity(WithSASLUsers(map[string]string{"alice": "pw"}), WithSASLEnforced(), WithTLS(ClientAuthWant))})
	dir := t.TempDir()
	pki, err := cfg.securePKI(dir)
	require.NoError(t, err)
	require.NotNil(t, pki)
	zoo, flags, err := cfg.secure.serverSetup(dir, cfg.secure.pkiDir, 4242)
	require.NoError(t, err)
	lines := strings.Join(zoo, "\n")
	for _, want := range []string{
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
		"enforce.auth.enabled=true", "enforce.auth.schemes=sasl",
		"secureClientPort=4242", "secureClientPortAddress=127.0.0.1", "ssl.clientAuth=want",
		"ssl.trustStore.location=" + filepath.Join(dir, "pki", "ca.pem"),
	} {
		require.Contains(t, lines, want)
	}
	require.Contains(t, flags, "-Djava.security.auth.login.config="+filepath.Join(dir, "jaas-server.conf"))
	jaas, err := os.ReadFile(filepath.Join(dir, "jaas-server.conf"))
	require.NoError(t, err)
	require.Contains(t, string(jaas), `user_alice="pw"`)
}
