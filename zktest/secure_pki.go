package zktest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// defaultCertHosts are the server certificate's SANs unless
// WithServerCertHosts says otherwise.
var defaultCertHosts = []string{"127.0.0.1", "localhost"}

// makeTestPKI writes a fresh CA, server and client certificate under dir,
// as ZooKeeper reads them with ssl.*Store.type=PEM: ca.pem (trust store),
// server.pem (PKCS#8 key + certificate + CA), client.crt, client.key. The
// server's certificate names hosts (an IP literal as an IP SAN, any other
// as a DNS SAN); none means defaultCertHosts.
func makeTestPKI(dir string, hosts ...string) (*TLSMaterial, error) {
	if len(hosts) == 0 {
		hosts = defaultCertHosts
	}
	var ips []net.IP
	var names []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			names = append(names, h)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	serial := int64(1)
	newCert := func(tmpl *x509.Certificate, parent *x509.Certificate, parentKey *rsa.PrivateKey) (*x509.Certificate, *rsa.PrivateKey, []byte, error) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, nil, nil, err
		}
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = now.Add(-time.Hour)
		tmpl.NotAfter = now.Add(48 * time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			return nil, nil, nil, err
		}
		c, err := x509.ParseCertificate(der)
		return c, key, der, err
	}
	ca, caKey, caDER, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{Organization: []string{"zktest"}, CommonName: "zktest CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	leaf := func(cn string, eku x509.ExtKeyUsage) (*rsa.PrivateKey, []byte, error) {
		_, key, der, err := newCert(&x509.Certificate{
			Subject:     pkix.Name{Organization: []string{"zktest"}, CommonName: cn},
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{eku},
			IPAddresses: ips,
			DNSNames:    names,
		}, ca, caKey)
		return key, der, err
	}
	srvKey, srvDER, err := leaf("localhost", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	cliKey, cliDER, err := leaf("zktest-client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	certPEM := func(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}) }
	keyPEM := func(k *rsa.PrivateKey) ([]byte, error) {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b}), nil
	}
	srvKeyPEM, err := keyPEM(srvKey)
	if err != nil {
		return nil, err
	}
	cliKeyPEM, err := keyPEM(cliKey)
	if err != nil {
		return nil, err
	}
	caPEM := certPEM(caDER)
	m := &TLSMaterial{
		CAFile:         filepath.Join(dir, "ca.pem"),
		CA:             x509.NewCertPool(),
		ClientCertFile: filepath.Join(dir, "client.crt"),
		ClientKeyFile:  filepath.Join(dir, "client.key"),
		ClientDN:       "CN=zktest-client,O=zktest",
	}
	m.CA.AddCert(ca)
	files := map[string][]byte{
		m.CAFile:                         caPEM,
		filepath.Join(dir, "server.pem"): append(append(srvKeyPEM, certPEM(srvDER)...), caPEM...),
		m.ClientCertFile:                 certPEM(cliDER),
		m.ClientKeyFile:                  cliKeyPEM,
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return nil, err
		}
	}
	if m.ClientCert, err = tls.X509KeyPair(certPEM(cliDER), cliKeyPEM); err != nil {
		return nil, err
	}
	return m, nil
}
