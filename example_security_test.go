package zkrecipes_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log"
	"os"

	"github.com/zkrecipes/zkrecipes"
)

// A Session over TLS to ZooKeeper's secureClientPort, with a client
// certificate (ssl.clientAuth=need), whose nodes only that certificate's
// holder may touch. The server's certificate is checked against the host
// as written ("zk1.example.com" here; an IP address written instead must
// be among its IP SANs). zktest.StartSecure starts such a server for tests.
func ExampleWithTLS() {
	ca, err := os.ReadFile("ca.pem")
	if err != nil {
		log.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair("client.crt", "client.key")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, []string{"zk1.example.com:2281"},
		zkrecipes.WithTLS(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}),
		zkrecipes.WithACL([]zkrecipes.ACL{zkrecipes.X509ACL("CN=app,O=example", zkrecipes.PermAll)}))
	switch {
	case errors.Is(err, zkrecipes.ErrTLSRefused):
		log.Fatal("the server wants a client certificate it trusts: ", err)
	case errors.Is(err, zkrecipes.ErrTLSUntrusted):
		log.Fatal("the server's certificate is not signed by ca.pem: ", err)
	case err != nil:
		log.Fatal(err)
	}
	defer session.Close()

	lease, err := zkrecipes.NewMutex(session, "/locks/report").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())
}

// A Session authenticated by SASL DIGEST-MD5 on a server that enforces it
// (enforce.auth.schemes=sasl), with nodes only that user may touch. The
// exchange runs again on every reconnect; a password the server no longer
// accepts ends the Session with ErrAuthFailed instead of redialling.
func ExampleWithSASL() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers(),
		zkrecipes.WithSASL(zkrecipes.DigestMD5("app", os.Getenv("ZK_PASSWORD"))),
		zkrecipes.WithACL([]zkrecipes.ACL{zkrecipes.SASLACL("app", zkrecipes.PermAll)}))
	if errors.Is(err, zkrecipes.ErrAuthFailed) {
		log.Fatal("check the user and password: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	subCtx, stop := context.WithCancel(context.Background())

	changes, _ := session.Subscribe(subCtx)
	defer stop()
	go func() {
		for ch := range changes {
			if ch.State == zkrecipes.StateLost && errors.Is(ch.Err, zkrecipes.ErrAuthFailed) {
				log.Print("the server no longer accepts the credentials: ", ch.Err)
			}
		}
	}()
}
