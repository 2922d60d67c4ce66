// Command leader-election shows the two sides of an election in one
// process: an observer that prints every change of leader, and three
// participants (each with its own ZooKeeper session, as separate processes
// would have) that each run a term while they lead and then step down.
//
//	ZK_SERVERS=127.0.0.1:2181 go run ./examples/leader-election
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

const path = "/examples/leader-election"

func main() {
	log.SetFlags(0)
	servers := strings.Split(envOr("ZK_SERVERS", "127.0.0.1:2181"), ",")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The observer: any process can watch who leads without campaigning.
	watcher, err := zkrecipes.Connect(ctx, servers)
	if err != nil {
		log.Fatal(err)
	}
	defer watcher.Close()
	octx, stopObserving := context.WithCancel(ctx)
	changes, err := zkrecipes.NewElection(watcher, path).Subscribe(octx)
	if err != nil {
		log.Fatal(err)
	}
	observed := make(chan struct{})
	allServed := make(chan struct{}) // closed once every participant led and left
	go func() {
		defer close(observed)
		leaders := 0
		for c := range changes {
			if c.HasLeader {
				leaders++
				fmt.Printf("observer: leader is now %s (epoch %d)\n", c.Leader.Data, c.Leader.Token)
				continue
			}
			fmt.Println("observer: no leader")
			if leaders > 0 { // the others were queued: nobody is left
				close(allServed)
			}
		}
	}()

	// Three participants campaign at once; each leads for one term.
	var wg sync.WaitGroup
	for _, name := range []string{"alice", "bob", "carol"} {
		s, err := zkrecipes.Connect(ctx, servers)
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		e := zkrecipes.NewElection(s, path, zkrecipes.WithParticipantID(name))
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.Run(ctx, func(ctx context.Context, lease *zkrecipes.Lease) error {
				fmt.Printf("%s: leading with epoch %d\n", name, lease.Token())
				if ps, err := e.Participants(ctx); err == nil {
					fmt.Printf("%s: %d participants in line\n", name, len(ps))
				}
				select {
				case <-time.After(time.Second): // the term's work
					fmt.Printf("%s: term done, stepping down\n", name)
				case <-ctx.Done():
					fmt.Printf("%s: leadership lost: %v\n", name, lease.Err())
				}
				return nil
			})
			if err != nil {
				log.Printf("%s: %v", name, err)
			}
		}()
	}
	wg.Wait()
	select {
	case <-allServed:
	case <-ctx.Done():
		log.Print("observer: did not see every term")
	}
	stopObserving()
	<-observed
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
