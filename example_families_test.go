package zkrecipes_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// A lock that is not reentrant: a second Acquire waits for the first lease
// to be released, even in the same goroutine.
func ExampleSemaphoreMutex() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	lease, err := zkrecipes.NewSemaphoreMutex(session, "/locks/nightly-export").Acquire(ctx)
	if err != nil {
		log.Fatal(err) // ctx ended, the Session closed, ...; never (nil, nil)
	}
	defer lease.Release(context.Background())
	log.Printf("exporting, fencing token %d", lease.Token())
}

// Holding the leadership yourself: Campaign returns it as a Lease, whose
// Done closes the moment it is lost or in doubt. Election.Run does the same
// loop for a function that works while it leads.
func ExampleElection_Campaign() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	e := zkrecipes.NewElection(session, "/services/scheduler/leader")
	lease, err := e.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("leading, epoch %d", lease.Token())
	select {
	case <-lease.Done():
		log.Printf("leadership lost: %v", lease.Err())
	case <-time.After(time.Minute): // a term of one minute
		if err := e.Resign(context.Background()); err != nil {
			log.Print(err)
		}
	}
}

// A function called with a node's children each time they change, until
// ctx ends or the function returns an error.
func ExampleWatchChildren() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	err = zkrecipes.WatchChildren(ctx, session, "/workers", func(children []string, stat *zkrecipes.NodeStat) error {
		if stat == nil {
			log.Print("no /workers node yet")
			return nil
		}
		log.Printf("%d workers: %v", len(children), children)
		return nil // a non-nil error stops the watch and is returned
	})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Fatal(err)
	}
}
