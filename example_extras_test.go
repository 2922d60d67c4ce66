package zkrecipes_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// The leader publishes where it serves; observers, Curator's included,
// read it as the leader's participant id.
func ExampleElection_Proclaim() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	e := zkrecipes.NewElection(session, "/services/indexer/leader",
		zkrecipes.WithLayout(zkrecipes.SelectorLayout), zkrecipes.WithParticipantID("indexer-1 starting"))
	err = e.Run(ctx, func(ctx context.Context, lease *zkrecipes.Lease) error {
		// Open the listener, then tell the others where it is.
		if err := e.Proclaim(ctx, lease, []byte("indexer-1 10.0.0.7:8080")); err != nil {
			return err
		}
		<-ctx.Done() // serve while leading: ctx ends when leadership does
		return nil
	})
	if err != nil {
		log.Print(err)
	}
}

// Who holds a semaphore's permits, and how many are left.
func ExampleSemaphore_Participants() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	sem := zkrecipes.NewSemaphore(session, "/limits/exports", 4)
	holders, err := sem.Participants(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range holders {
		fmt.Printf("%s held by %s since %s (holder: %v)\n", p.Node, p.Data, p.Created, p.Holder)
	}
	free, err := sem.Available(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(free, "permits free")
}

// A leader on a link that keeps dropping: it still learns of each loss at
// once (fn's ctx ends), but campaigns again only once the connection has
// stayed up for 5s, for at most about a minute of damping.
func ExampleWithFlapDamping() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers(),
		zkrecipes.WithFlapDamping(zkrecipes.RetryNTimes(12, 5*time.Second)))
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	e := zkrecipes.NewElection(session, "/services/indexer/leader")
	err = e.Run(ctx, func(ctx context.Context, lease *zkrecipes.Lease) error {
		<-ctx.Done() // lead until leadership is lost or in doubt
		return nil
	}, zkrecipes.WithRequeue(true))
	if err != nil {
		log.Print(err)
	}
}
