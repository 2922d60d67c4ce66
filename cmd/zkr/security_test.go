package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// parseSecurity parses args into a fresh security.
func parseSecurity(t *testing.T, args ...string) (*security, error) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var s security
	s.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &s, nil
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// selfSigned writes a certificate and its key as PEM files.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zkr-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))),
		writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
}

func TestSecurityFlags_NoPasswordFlagExists(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var s security
	s.register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if strings.Contains(f.Name, "password") && !strings.HasSuffix(f.Name, "-env") && !strings.HasSuffix(f.Name, "-file") {
			t.Errorf("flag --%s would put a password on the command line", f.Name)
		}
	})
	if _, err := parseSecurity(t, "--sasl-password", "x"); err == nil {
		t.Fatal("--sasl-password was accepted")
	}
}

func TestSecurityFlags_BuildTheSessionOptions(t *testing.T) {
	cert, key := selfSigned(t)
	t.Setenv(defaultPasswordEnv, "alice-secret")
	t.Setenv("OTHER_PW", "x")
	for _, tc := range []struct {
		name string
		args []string
		opts int
	}{
		{"none", nil, 0},
		{"tls, system roots", []string{"--tls"}, 1},
		{"tls with CA and client certificate", []string{"--tls-ca", cert, "--tls-cert", cert, "--tls-key", key, "--tls-server-name", "zk1"}, 1},
		{"digest from the default variable", []string{"--sasl", "digest-md5", "--sasl-user", "alice"}, 1},
		{"digest from another variable", []string{"--sasl", "DIGEST-MD5", "--sasl-user", "alice", "--sasl-password-env", "OTHER_PW"}, 1},
		{"tls and digest", []string{"--tls-ca", cert, "--sasl", "digest-md5", "--sasl-user", "alice"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSecurity(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			opts, done, err := s.options()
			defer done()
			if err != nil || len(opts) != tc.opts {
				t.Fatalf("options: %d, %v; want %d", len(opts), err, tc.opts)
			}
		})
	}
}

func TestSecurityFlags_UnworkableCombinationsAreUsageErrors(t *testing.T) {
	cert, key := selfSigned(t)
	t.Setenv(defaultPasswordEnv, "")
	missing := filepath.Join(t.TempDir(), "missing")
	for name, args := range map[string][]string{
		"unknown mechanism":        {"--sasl", "plain"},
		"digest without user":      {"--sasl", "digest-md5"},
		"digest without password":  {"--sasl", "digest-md5", "--sasl-user", "alice"},
		"password file missing":    {"--sasl", "digest-md5", "--sasl-user", "alice", "--sasl-password-file", missing},
		"user without mechanism":   {"--sasl-user", "alice"},
		"cert without key":         {"--tls-cert", cert},
		"key without cert":         {"--tls-key", key},
		"CA file not PEM":          {"--tls-ca", writeFile(t, "ca.pem", "not a certificate")},
		"CA file missing":          {"--tls-ca", missing},
		"keytab without principal": {"--sasl", "gssapi", "--krb-keytab", missing},
		"gssapi with sasl-user":    {"--sasl", "gssapi", "--sasl-user", "alice"},
		"gssapi, no krb5.conf":     {"--sasl", "gssapi", "--krb5-conf", missing, "--krb-keytab", missing, "--krb-principal", "alice@R"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := parseSecurity(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			_, done, err := s.options()
			defer done()
			if !errors.Is(err, errSecurityFlags) {
				t.Fatalf("options: %v; want a usage error", err)
			}
			if code := zkErr("t", err); code != exitUsage {
				t.Fatalf("exit status %d, want %d", code, exitUsage)
			}
		})
	}
}

func TestSecurityFlags_PasswordFileWinsAndLosesOneNewline(t *testing.T) {
	t.Setenv(defaultPasswordEnv, "from-env")
	s, err := parseSecurity(t, "--sasl-password-file", writeFile(t, "pw", "from file \n"))
	if err != nil {
		t.Fatal(err)
	}
	pw, err := s.password()
	if err != nil || pw != "from file " {
		t.Fatalf("password %q, %v", pw, err)
	}
	s.passwordFile = ""
	if pw, _ := s.password(); pw != "from-env" {
		t.Fatalf("password %q from the environment", pw)
	}
}
