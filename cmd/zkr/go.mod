module github.com/zkrecipes/zkrecipes/cmd/zkr

go 1.24.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000
)

require (
	github.com/hashicorp/go-uuid v1.0.3 // indirect
	github.com/jcmturner/aescts/v2 v2.0.0 // indirect
	github.com/jcmturner/dnsutils/v2 v2.0.0 // indirect
	github.com/jcmturner/gofork v1.7.6 // indirect
	github.com/jcmturner/goidentity/v6 v6.0.1 // indirect
	github.com/jcmturner/gokrb5/v8 v8.4.4 // indirect
	github.com/jcmturner/rpc/v2 v2.0.3 // indirect
	golang.org/x/crypto v0.45.0 // indirect
	golang.org/x/net v0.47.0 // indirect
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/zkrecipes/zkrecipes/kerberos v0.0.0-00010101000000-000000000000
)
