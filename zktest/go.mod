module github.com/zkrecipes/zkrecipes/zktest

go 1.25.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
