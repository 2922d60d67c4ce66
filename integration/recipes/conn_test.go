package recipes_test

import (
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// zktestConnect makes a plain go-zookeeper connection to adopt.
func zktestConnect(c *zktest.Cluster) (*zk.Conn, <-chan zk.Event, error) {
	return zk.Connect(c.Servers(), 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
}

func worldACL() []zk.ACL { return zk.WorldACL(zk.PermAll) }
