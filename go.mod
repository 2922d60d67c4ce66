module github.com/zkrecipes/zkrecipes

go 1.24

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/go-zookeeper/zk v1.0.4
)

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
