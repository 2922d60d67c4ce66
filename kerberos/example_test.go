package kerberos_test

import (
	"context"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/kerberos"
)

// A Session to an ensemble whose servers run as zookeeper/<their host name>,
// authenticated as the service principal app/host1 with its keytab. Every
// connection, the first and every reconnect to any server, authenticates
// before anything else; nodes the Session creates are readable only by it.
func Example() {
	mech, err := kerberos.New(
		kerberos.WithKeytab("app/host1@EXAMPLE.COM", "/etc/app/app.keytab"),
		kerberos.WithConfigFile("/etc/krb5.conf"),
	)
	if err != nil {
		log.Fatal(err) // errors.Is(err, kerberos.ErrConfig)
	}
	defer mech.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zkrecipes.Connect(ctx, []string{"zk1.example.com:2181", "zk2.example.com:2181"},
		zkrecipes.WithSASL(mech),
		zkrecipes.WithACL([]zkrecipes.ACL{zkrecipes.SASLACL(mech.Principal(), zkrecipes.PermAll)}),
	)
	if err != nil {
		// errors.Is(err, zkrecipes.ErrAuthFailed): the KDC or the server
		// refused the credentials; kerberos.ErrLogin, ErrServiceTicket,
		// ErrMutualAuth say which step.
		log.Fatal(err)
	}
	defer s.Close()

	lease, err := zkrecipes.NewMutex(s, "/app/lock").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())
}
