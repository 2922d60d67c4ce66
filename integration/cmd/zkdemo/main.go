// Command zkdemo starts a throw-away ZooKeeper server with the zktest harness, connects
// to it with go-zookeeper, prints the client's state changes, writes and reads a node,
// and shuts everything down. It is a placeholder: the library team replaces its body
// with a demo of the recipes.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "zkdemo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := zktest.StartCluster(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("server (%s backend) up in %v at %s\n", c.Backend(), c.StartDuration().Round(time.Millisecond), c.ConnectString())

	conn, events, err := zk.Connect(c.Servers(), 4*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	drained := make(chan struct{})
	hasSession := make(chan struct{})
	go func() {
		defer close(drained)
		once := false
		for ev := range events {
			if ev.Type == zk.EventSession {
				fmt.Printf("client state: %v\n", ev.State)
				if ev.State == zk.StateHasSession && !once {
					once = true
					close(hasSession)
				}
			}
		}
	}()
	defer func() { conn.Close(); <-drained }()
	select {
	case <-hasSession:
	case <-ctx.Done():
		return ctx.Err()
	}

	path, err := conn.Create("/zkdemo", []byte("hello from zkdemo"), 0, zk.WorldACL(zk.PermAll))
	if err != nil {
		return err
	}
	data, stat, err := conn.Get(path)
	if err != nil {
		return err
	}
	fmt.Printf("read %s: %q (czxid 0x%x)\n", path, data, stat.Czxid)
	return nil
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
