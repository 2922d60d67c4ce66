package zkrecipes_test

import (
	"context"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// Workers hold back until a coordinator lifts the barrier.
func ExampleBarrier() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	gate := zkrecipes.NewBarrier(session, "/barriers/deploy")
	if err := gate.Set(ctx); err != nil { // the coordinator, before the workers start
		log.Fatal(err)
	}
	go func() { _ = gate.Remove(ctx) }()   // the coordinator, once ready
	if err := gate.Wait(ctx); err != nil { // each worker
		log.Fatal(err)
	}
}

// Three processes start a round of work together and finish it together.
func ExampleDoubleBarrier() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	round := zkrecipes.NewDoubleBarrier(session, "/barriers/round", 3)
	if err := round.Enter(ctx); err != nil { // returns once 3 members are in
		log.Fatal(err)
	}
	// ... the round's work ...
	if err := round.Leave(ctx); err != nil { // returns once all have left
		log.Fatal(err)
	}
}
