package zkr_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// runEnv runs zkr to completion against servers with extra environment.
func runEnv(t *testing.T, servers string, env []string, args ...string) (int, string, string) {
	t.Helper()
	require.NoError(t, buildErr)
	cmd := zkrCmd(zkrBin, servers, args...)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr zktest.LogBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("zkr %s still running after a minute:\n%s", strings.Join(args, " "), stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// zkr with --sasl digest-md5 and the password from the environment (or a
// file) is accepted by a server that requires SASL; without it, or with a
// wrong password, it is refused and says so, at once.
func TestZkrSASLDigestAgainstEnforcingServer(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithSASLUsers(map[string]string{"alice": "alice-secret"}), zktest.WithSASLEnforced())
	path := testPath(t) + "/n"
	sasl := []string{"--sasl", "digest-md5", "--sasl-user", "alice", "--connect-timeout", "20s"}

	code, _, stderr := runEnv(t, srv.Addr, []string{"ZKR_SASL_PASSWORD=alice-secret"}, append([]string{"count", "set", path, "7"}, sasl...)...)
	require.Zero(t, code, stderr)

	pwFile := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte("alice-secret\n"), 0o600))
	code, stdout, stderr := runEnv(t, srv.Addr, []string{"ZKR_SASL_PASSWORD="}, append([]string{"count", "get", path, "--sasl-password-file", pwFile}, sasl...)...)
	require.Zero(t, code, stderr)
	assert.Equal(t, "7", strings.TrimSpace(stdout))

	start := time.Now()
	code, _, stderr = runEnv(t, srv.Addr, []string{"ZKR_SASL_PASSWORD=wrong"}, append([]string{"count", "get", path}, sasl...)...)
	assert.Equal(t, 69, code, stderr)
	assert.Contains(t, stderr, "authentication failed")
	assert.Less(t, time.Since(start), 15*time.Second, "refused at once, not after the connect timeout")

	code, _, stderr = runEnv(t, srv.Addr, nil, "count", "get", path)
	assert.Equal(t, 69, code, stderr)
	assert.Contains(t, stderr, "requires sasl")

	// The node commands take the same flags.
	pw := []string{"ZKR_SASL_PASSWORD=alice-secret"}
	code, _, stderr = runEnv(t, srv.Addr, pw, append([]string{"create", path + "-cfg", "v1"}, sasl...)...)
	require.Zero(t, code, stderr)
	code, stdout, stderr = runEnv(t, srv.Addr, pw, append([]string{"get", path + "-cfg"}, sasl...)...)
	require.Zero(t, code, stderr)
	assert.Equal(t, "v1", stdout)
	code, _, stderr = runEnv(t, srv.Addr, nil, "ls", testPath(t))
	assert.Equal(t, 69, code, stderr)
	assert.Contains(t, stderr, "requires sasl")

	code, _, stderr = runEnv(t, srv.Addr, []string{"ZKR_SASL_PASSWORD="}, append([]string{"count", "get", path}, sasl...)...)
	assert.Equal(t, 64, code, "no password anywhere is a usage error: %s", stderr)
}

// zkr over TLS with a client certificate, against a server that requires
// one; without the certificate the handshake is refused and zkr says so.
func TestZkrTLSWithClientCertificate(t *testing.T) {
	srv := zktest.StartSecureServer(t, zktest.WithTLS(zktest.ClientAuthNeed))
	m := srv.TLS()
	path := testPath(t) + "/n"
	tls := []string{"--tls-ca", m.CAFile, "--connect-timeout", "20s"}

	code, _, stderr := runEnv(t, srv.TLSAddr, nil, append([]string{"count", "set", path, "3", "--tls-cert", m.ClientCertFile, "--tls-key", m.ClientKeyFile}, tls...)...)
	require.Zero(t, code, stderr)

	code, _, stderr = runEnv(t, srv.TLSAddr, nil, append([]string{"count", "get", path}, tls...)...)
	assert.Equal(t, 69, code, stderr)
	assert.Contains(t, stderr, "tls handshake refused")

	// The node commands take the same flags.
	cert := append([]string{"--tls-cert", m.ClientCertFile, "--tls-key", m.ClientKeyFile}, tls...)
	code, stdout, stderr := runEnv(t, srv.TLSAddr, nil, append([]string{"ls", "-R", testPath(t)}, cert...)...)
	require.Zero(t, code, stderr)
	assert.Equal(t, testPath(t)+"\n"+path+"\n", stdout)
	code, _, stderr = runEnv(t, srv.TLSAddr, nil, append([]string{"rm", path}, tls...)...)
	assert.Equal(t, 69, code, stderr)
	assert.Contains(t, stderr, "tls handshake refused")
}

// zkr with --sasl gssapi logs in with a keytab and is accepted by a
// Kerberos server that requires SASL.
func TestZkrKerberosKeytab(t *testing.T) {
	kdc := zktest.StartKDC(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keytab, err := kdc.AddPrincipal(ctx, "alice")
	require.NoError(t, err)
	srv := zktest.StartSecureServer(t, zktest.WithKerberos(kdc), zktest.WithSASLEnforced())
	path := testPath(t) + "/n"
	code, _, stderr := runEnv(t, srv.Addr, nil, "count", "set", path, "11", "--sasl", "gssapi",
		"--krb5-conf", kdc.ConfigPath, "--krb-keytab", keytab, "--krb-principal", "alice@"+zktest.KDCRealm,
		"--krb-service-host", "localhost", "--connect-timeout", "20s")
	require.Zero(t, code, stderr)

	code, _, stderr = runEnv(t, srv.Addr, nil, "count", "get", path, "--sasl", "gssapi",
		"--krb5-conf", kdc.ConfigPath, "--krb-keytab", keytab, "--krb-principal", "bob@"+zktest.KDCRealm,
		"--krb-service-host", "localhost", "--connect-timeout", "20s")
	assert.Equal(t, 69, code, stderr)
	assert.Contains(t, stderr, "kerberos login failed")
}
