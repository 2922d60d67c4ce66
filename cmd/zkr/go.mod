module github.com/zkrecipes/zkrecipes/cmd/zkr

go 1.24

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/zkrecipes/zkrecipes v0.0.0-00010101000000-000000000000
)

require github.com/cenkalti/backoff/v4 v4.3.0 // indirect

replace github.com/zkrecipes/zkrecipes => ../..
