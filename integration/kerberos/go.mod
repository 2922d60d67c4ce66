module github.com/zkrecipes/zkrecipes/integration/kerberos

go 1.25.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/stretchr/testify v1.12.1
	github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000
	github.com/zkrecipes/zkrecipes/kerberos v0.0.0-00010101000000-000000000000
	github.com/zkrecipes/zkrecipes/zktest v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/hashicorp/go-uuid v1.0.3 // indirect
	github.com/jcmturner/aescts/v2 v2.0.0 // indirect
	github.com/jcmturner/dnsutils/v2 v2.0.0 // indirect
	github.com/jcmturner/gofork v1.7.6 // indirect
	github.com/jcmturner/goidentity/v6 v6.0.1 // indirect
	github.com/jcmturner/gokrb5/v8 v8.4.4 // indirect
	github.com/jcmturner/rpc/v2 v2.0.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.57.0 // indirect
)
