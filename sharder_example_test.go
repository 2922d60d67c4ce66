package zkrecipes_test

import (
	"context"
	"fmt"
	"log"

	"github.com/zkrecipes/zkrecipes"
)

// Producers put mail jobs through a sharder, which spreads the queue over
// more shards once one holds 10,000 jobs; workers take from every shard,
// each job under a lock, and ack it once sent. A Curator QueueSharder on
// the same queues and leader paths, whose allocator builds
// DistributedQueues locking under "/queues/mail-locks/<shard name>",
// shares the queue.
func ExampleQueueSharder() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	mail := zkrecipes.NewQueueSharder(session, "/queues/mail", "/queues/mail-leader")
	if err := mail.Start(ctx); err != nil { // learns the shards, adds one if there is none
		log.Fatal(err)
	}
	defer mail.Close(context.Background()) // the shards and their jobs stay

	if err := mail.Put(ctx, []byte("welcome:ada@example.org")); err != nil {
		log.Fatal(err)
	}
	job, err := mail.Take(ctx) // from whichever shard has one
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sending", string(job.Data()))
	if err := job.Ack(ctx); err != nil {
		log.Print(err)
	}
}
