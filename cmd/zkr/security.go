package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/kerberos"
)

// defaultPasswordEnv is the environment variable the SASL password is read
// from unless --sasl-password-env or --sasl-password-file says otherwise.
const defaultPasswordEnv = "ZKR_SASL_PASSWORD"

// security holds the TLS and SASL flags every command takes. A password is
// never a flag: it comes from an environment variable or a file, so that it
// does not show in ps or in a shell's history.
type security struct {
	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string

	sasl         string
	saslUser     string
	passwordEnv  string
	passwordFile string

	krbKeytab      string
	krbPrincipal   string
	krbConfig      string
	krbCCache      string
	krbServiceName string
	krbServiceHost string
	krbCanonical   bool
}

func (s *security) register(fs *flag.FlagSet) {
	fs.BoolVar(&s.tls, "tls", false, "connect to the servers' TLS port (secureClientPort); implied by the other --tls-* flags")
	fs.StringVar(&s.tlsCA, "tls-ca", "", "PEM file of the CA(s) to verify the servers' certificates with (default: the system's roots)")
	fs.StringVar(&s.tlsCert, "tls-cert", "", "PEM file of the client certificate, for servers with ssl.clientAuth=need|want (with --tls-key)")
	fs.StringVar(&s.tlsKey, "tls-key", "", "PEM file of the client certificate's private key")
	fs.StringVar(&s.tlsServerName, "tls-server-name", "", "name to verify the servers' certificates against (default: the host dialled)")
	fs.StringVar(&s.sasl, "sasl", "", "SASL mechanism the servers speak: digest-md5 or gssapi (Kerberos); default none")
	fs.StringVar(&s.saslUser, "sasl-user", "", "DIGEST-MD5 user name (the password comes from $"+defaultPasswordEnv+", --sasl-password-env or --sasl-password-file)")
	fs.StringVar(&s.passwordEnv, "sasl-password-env", defaultPasswordEnv, "environment variable holding the DIGEST-MD5 password")
	fs.StringVar(&s.passwordFile, "sasl-password-file", "", "file holding the DIGEST-MD5 password (one trailing newline is dropped); wins over the environment")
	fs.StringVar(&s.krbKeytab, "krb-keytab", "", "GSSAPI: keytab file to log in with (with --krb-principal); default: the credential cache")
	fs.StringVar(&s.krbPrincipal, "krb-principal", "", "GSSAPI: client principal, user@REALM")
	fs.StringVar(&s.krbCCache, "krb-ccache", "", "GSSAPI: credential cache file when no keytab is given (default $KRB5CCNAME, else /tmp/krb5cc_<uid>)")
	fs.StringVar(&s.krbConfig, "krb5-conf", "", "GSSAPI: krb5.conf (default $KRB5_CONFIG, else /etc/krb5.conf)")
	fs.StringVar(&s.krbServiceName, "krb-service-name", "zookeeper", "GSSAPI: service part of the servers' principal")
	fs.StringVar(&s.krbServiceHost, "krb-service-host", "", "GSSAPI: host part of the servers' principal (default: the host dialled)")
	fs.BoolVar(&s.krbCanonical, "krb-canonicalize", false, "GSSAPI: use the canonical name of the host dialled (reverse DNS), as the Java client does")
}

// errSecurityFlags marks a bad combination of security flags: a usage error.
var errSecurityFlags = errors.New("bad security flags")

// options returns the Session options the flags ask for, and a function to
// call once the Session is closed. It reads the files named (certificates,
// password, keytab) and fails, wrapping errSecurityFlags, on a combination
// that cannot work.
func (s *security) options() ([]zkrecipes.SessionOption, func(), error) {
	var opts []zkrecipes.SessionOption
	done := func() {}
	bad := func(format string, args ...any) ([]zkrecipes.SessionOption, func(), error) {
		return nil, done, fmt.Errorf("%w: %s", errSecurityFlags, fmt.Sprintf(format, args...))
	}
	if s.tls || s.tlsCA != "" || s.tlsCert != "" || s.tlsKey != "" || s.tlsServerName != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.tlsServerName}
		if s.tlsCA != "" {
			pem, err := os.ReadFile(s.tlsCA)
			if err != nil {
				return bad("--tls-ca: %v", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return bad("--tls-ca %s: no PEM certificate in it", s.tlsCA)
			}
		}
		if (s.tlsCert == "") != (s.tlsKey == "") {
			return bad("--tls-cert and --tls-key go together")
		}
		if s.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(s.tlsCert, s.tlsKey)
			if err != nil {
				return bad("--tls-cert/--tls-key: %v", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, zkrecipes.WithTLS(cfg))
	}
	switch strings.ToLower(s.sasl) {
	case "":
		if s.saslUser != "" || s.krbKeytab != "" || s.krbPrincipal != "" {
			return bad("--sasl-user, --krb-keytab and --krb-principal need --sasl")
		}
	case "digest-md5", "digest":
		if s.saslUser == "" {
			return bad("--sasl digest-md5 needs --sasl-user")
		}
		pw, err := s.password()
		if err != nil {
			return nil, done, err
		}
		opts = append(opts, zkrecipes.WithSASL(zkrecipes.DigestMD5(s.saslUser, pw)))
	case "gssapi", "kerberos":
		if s.saslUser != "" {
			return bad("--sasl gssapi takes --krb-principal, not --sasl-user")
		}
		if (s.krbKeytab == "") != (s.krbPrincipal == "") {
			return bad("--krb-keytab and --krb-principal go together")
		}
		var kopts []kerberos.Option
		if s.krbKeytab != "" {
			kopts = append(kopts, kerberos.WithKeytab(s.krbPrincipal, s.krbKeytab))
		}
		if s.krbCCache != "" {
			kopts = append(kopts, kerberos.WithCredentialCache(s.krbCCache))
		}
		if s.krbConfig != "" {
			kopts = append(kopts, kerberos.WithConfigFile(s.krbConfig))
		}
		kopts = append(kopts, kerberos.WithServiceName(s.krbServiceName))
		if s.krbServiceHost != "" {
			kopts = append(kopts, kerberos.WithServiceHost(s.krbServiceHost))
		}
		if s.krbCanonical {
			kopts = append(kopts, kerberos.WithCanonicalHostname())
		}
		m, err := kerberos.New(kopts...)
		if err != nil {
			return bad("%v", err)
		}
		opts = append(opts, zkrecipes.WithSASL(m))
		done = func() { _ = m.Close() }
	default:
		return bad("--sasl %q: want digest-md5 or gssapi", s.sasl)
	}
	return opts, done, nil
}

// password reads the DIGEST-MD5 password from --sasl-password-file, else
// from the environment variable --sasl-password-env names.
func (s *security) password() (string, error) {
	if s.passwordFile != "" {
		b, err := os.ReadFile(s.passwordFile)
		if err != nil {
			return "", fmt.Errorf("%w: --sasl-password-file: %v", errSecurityFlags, err)
		}
		pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if pw == "" {
			return "", fmt.Errorf("%w: --sasl-password-file %s is empty", errSecurityFlags, s.passwordFile)
		}
		return pw, nil
	}
	pw, ok := os.LookupEnv(s.passwordEnv)
	if !ok || pw == "" {
		return "", fmt.Errorf("%w: no password: set $%s or use --sasl-password-file (never a flag)", errSecurityFlags, s.passwordEnv)
	}
	return pw, nil
}
