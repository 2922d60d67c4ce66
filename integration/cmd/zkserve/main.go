// Command zkserve starts a throw-away local ZooKeeper server with the zktest
// harness (on 127.0.0.1, a port the OS picks), prints its address as a
// ZK_SERVERS line, and serves until Ctrl-C or SIGTERM, then stops it and
// removes its data. Use it to try the examples and zkr without installing a
// server:
//
//	cd integration && go run ./cmd/zkserve
//	ZK_SERVERS=127.0.0.1:PORT go run ./examples/leader-election
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	c, err := zktest.StartCluster(sctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkserve:", err)
		os.Exit(1)
	}
	fmt.Printf("ZK_SERVERS=%s\n", c.ConnectString())
	fmt.Fprintf(os.Stderr, "zkserve: %s backend up in %v; Ctrl-C stops it\n", c.Backend(), c.StartDuration().Round(time.Millisecond))
	<-ctx.Done()
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "zkserve:", err)
		os.Exit(1)
	}
}
