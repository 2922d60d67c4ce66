package zkrecipes_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// servers returns the ensemble to run the examples against.
func servers() []string {
	if s := os.Getenv("ZK_SERVERS"); s != "" {
		return strings.Split(s, ",")
	}
	return []string{"127.0.0.1:2181"}
}

// A critical section guarded across processes: the work runs under the
// lease's context, which ends the moment ownership is lost.
func ExampleMutex() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers(), zkrecipes.WithSessionTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	mu := zkrecipes.NewMutex(session, "/locks/nightly-report")
	lease, err := mu.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())

	work, stop := lease.Context(ctx) // lost or released: work ends, context.Cause(work) says why
	defer stop()
	generateReport(work, lease.Token())
}

func generateReport(ctx context.Context, fencingToken int64) {
	fmt.Println("report written with token", fencingToken > 0, ctx.Err() == nil)
}

// Work that must stop when ownership ends runs under the lease's context;
// context.Cause tells a loss (matching ErrLockLost) from a release.
func ExampleLease_Context() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	lease, err := zkrecipes.NewMutex(session, "/locks/nightly-report").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())

	work, stop := lease.Context(ctx)
	defer stop()
	generateReport(work, lease.Token())
	if err := context.Cause(work); errors.Is(err, zkrecipes.ErrLockLost) {
		log.Printf("lock lost during the report: %v", err)
	}
}

// TryAcquire gives up at once when someone else holds the lock.
func ExampleMutex_TryAcquire() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	lease, err := zkrecipes.NewMutex(session, "/locks/cron").TryAcquire(ctx)
	if errors.Is(err, zkrecipes.ErrLocked) {
		fmt.Println("another replica runs the job")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
	fmt.Println("running the job")
}

// A Session reports its connection states, as Curator names them.
func ExampleSession_Subscribe() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	subCtx, cancel := context.WithCancel(context.Background())
	changes, _ := session.Subscribe(subCtx)
	defer cancel()
	go func() {
		for c := range changes {
			log.Printf("zookeeper: %v (session 0x%x) %v", c.State, c.SessionID, c.Err)
		}
	}()
	session.Close()
}
