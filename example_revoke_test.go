package zkrecipes_test

import (
	"context"
	"errors"
	"log"
	"path"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// A lock that nobody can keep for more than a minute: when the lease time
// runs out the lease is lost (ErrLeaseExpired) and the next contender gets
// in. A holder paused past its lease time is stopped only by the fence, so
// writes still carry the token.
func ExampleWithLeaseTime() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	mu := zkrecipes.NewMutex(session, "/locks/import", zkrecipes.WithLeaseTime(time.Minute))
	lease, err := mu.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	work, stop := lease.Context(ctx)
	defer stop()
	generateReport(work, lease.Token())
	if err := lease.Release(ctx); errors.Is(err, zkrecipes.ErrLeaseExpired) {
		log.Print("the import ran past its lease time")
	}
}

// A holder that gives the lock up when asked, and a process that asks it
// to, as Curator's makeRevocable and Revoker do (either side may be
// Curator).
func ExampleRevoke() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	mu := zkrecipes.NewMutex(session, "/locks/maintenance", zkrecipes.WithRevocable(true))
	lease, err := mu.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		select {
		case <-lease.Revoked(): // asked to give up: finish up, then release
		case <-lease.Done():
		}
		_ = lease.Release(context.Background())
	}()

	// Elsewhere: ask whoever holds the lock to release it.
	holders, err := mu.Participants(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range holders {
		if p.Holder {
			if err := zkrecipes.Revoke(ctx, session, path.Join(mu.Path(), p.Node)); err != nil {
				log.Fatal(err)
			}
		}
	}
}
