// Command singleton-worker is one replica of a service of which exactly one
// replica works at a time. Start several: one leads and works, the others
// stand by; when the leader dies (kill -9, a crash, a partition) the next
// one takes over once ZooKeeper expires the dead one's session, and when it
// stops cleanly (Ctrl-C, SIGTERM) it resigns and the next takes over at
// once.
//
//	ZK_SERVERS=127.0.0.1:2181 go run ./examples/singleton-worker -id w1
//
// Every line it prints starts with its id; `make demo` reads them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

func main() {
	host, _ := os.Hostname()
	id := flag.String("id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this replica's name")
	servers := flag.String("servers", envOr("ZK_SERVERS", "127.0.0.1:2181"), "ZooKeeper servers, host:port,... (default $ZK_SERVERS)")
	path := flag.String("path", "/examples/singleton-worker", "election path shared by the replicas")
	timeout := flag.Duration("session-timeout", 4*time.Second, "ZooKeeper session timeout: how long a dead leader blocks the others")
	every := flag.Duration("interval", 500*time.Millisecond, "time between two jobs")
	flag.Parse()
	log.SetFlags(0)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	session, err := zkrecipes.Connect(ctx, strings.Split(*servers, ","), zkrecipes.WithSessionTimeout(*timeout))
	if err != nil {
		log.Fatalf("%s: %v", *id, err)
	}
	defer session.Close()

	election := zkrecipes.NewElection(session, *path, zkrecipes.WithParticipantID(*id))
	fmt.Printf("%s: standing by (session 0x%x)\n", *id, session.SessionID())
	err = election.Run(ctx, func(ctx context.Context, lease *zkrecipes.Lease) error {
		// Leading. The token is this term's epoch: a storage that rejects
		// tokens lower than the highest it has seen is safe from a deposed
		// leader that has not noticed yet.
		fmt.Printf("%s: leader (token %d)\n", *id, lease.Token())
		tick := time.NewTicker(*every)
		defer tick.Stop()
		for job := 1; ; job++ {
			select {
			case <-ctx.Done():
				if lease.Err() != nil && !errors.Is(lease.Err(), zkrecipes.ErrReleased) {
					fmt.Printf("%s: lost leadership: %v\n", *id, lease.Err())
				}
				return nil
			case <-tick.C:
				fmt.Printf("%s: job %d done (token %d)\n", *id, job, lease.Token())
			}
		}
	}, zkrecipes.WithRequeue(true))
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatalf("%s: %v", *id, err)
	}
	fmt.Printf("%s: stopped\n", *id)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
