package zkrecipes_test

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// A singleton worker: of every replica that runs this, one works at a
// time. fn's ctx ends the moment leadership is in doubt (context.Cause
// says why); with WithRequeue the replica then stands again, and
// WithRequeueOnError keeps it standing after a failed term too.
func ExampleElection_Run() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	session, err := zkrecipes.Connect(ctx, servers(), zkrecipes.WithSessionTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	hostname, _ := os.Hostname()
	e := zkrecipes.NewElection(session, "/services/billing/leader", zkrecipes.WithParticipantID(hostname))
	err = e.Run(ctx, func(ctx context.Context, lease *zkrecipes.Lease) error {
		log.Printf("leading, epoch %d", lease.Token()) // hand the epoch to every store written
		for {
			select {
			case <-ctx.Done():
				log.Printf("no longer leading: %v", context.Cause(ctx))
				return nil
			case <-time.After(time.Second):
				// one unit of work, under ctx
			}
		}
	}, zkrecipes.WithRequeue(true), zkrecipes.WithRequeueOnError(true))
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err) // Ctrl-C resigned; anything else is a failure
	}
}

// Who leads, as it changes, without standing for election.
func ExampleElection_Subscribe() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	changes, err := zkrecipes.NewElection(session, "/services/billing/leader").Subscribe(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for c := range changes { // closed when ctx ends
		if c.HasLeader {
			log.Printf("leader: %s (since %s)", c.Leader.Data, c.Leader.Created)
		} else {
			log.Print("nobody stands")
		}
	}
}
