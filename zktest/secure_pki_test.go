package zktest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The certificates a TLS SecureServer makes verify as a Go client and a
// ZooKeeper server check them: the server's for 127.0.0.1 and localhost
// against the CA, the client's for client authentication, and server.pem
// holds a PKCS#8 key and the chain, as ZooKeeper's PEM key store reads it.
func TestTestPKIVerifiesForLoopbackAndClientAuth(t *testing.T) {
	dir := t.TempDir()
	m, err := makeTestPKI(dir)
	require.NoError(t, err)

	b, err := os.ReadFile(filepath.Join(dir, "server.pem"))
	require.NoError(t, err)
	var types []string
	var certs []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		types = append(types, blk.Type)
		if blk.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(blk.Bytes)
			require.NoError(t, err)
			certs = append(certs, c)
		}
	}
	require.Equal(t, []string{"PRIVATE KEY", "CERTIFICATE", "CERTIFICATE"}, types)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		_, err = certs[0].Verify(x509.VerifyOptions{DNSName: host, Roots: m.CA})
		require.NoError(t, err, host)
	}
	_, err = certs[0].Verify(x509.VerifyOptions{DNSName: "example.com", Roots: m.CA})
	require.Error(t, err)

	leaf, err := x509.ParseCertificate(m.ClientCert.Certificate[0])
	require.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: m.CA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	require.Equal(t, m.ClientDN, leaf.Subject.String())
	_, err = tls.LoadX509KeyPair(m.ClientCertFile, m.ClientKeyFile)
	require.NoError(t, err)
}

// WithServerCertHosts("localhost") makes a certificate for the name only:
// it does not verify against 127.0.0.1.
func TestTestPKIForANameOnlyHasNoIPSAN(t *testing.T) {
	dir := t.TempDir()
	m, err := makeTestPKI(dir, "localhost")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "server.pem"))
	require.NoError(t, err)
	var leaf *x509.Certificate
	for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
		if blk.Type == "CERTIFICATE" {
			leaf, err = x509.ParseCertificate(blk.Bytes)
			require.NoError(t, err)
			break
		}
	}
	require.NotNil(t, leaf)
	require.Empty(t, leaf.IPAddresses)
	require.Equal(t, []string{"localhost"}, leaf.DNSNames)
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: m.CA})
	require.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "127.0.0.1", Roots: m.CA})
	require.Error(t, err)
}
