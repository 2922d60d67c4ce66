module github.com/zkrecipes/zkrecipes

go 1.24

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/go-zookeeper/zk v1.0.4
)
