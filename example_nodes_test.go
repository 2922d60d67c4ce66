package zkrecipes_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// Nodes of one's own, beside the recipes: namespaced, size-checked,
// typed and retried like the recipes' requests.
func ExampleSession_Create() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers(), zkrecipes.WithNamespace("app"))
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	// /app/config/db, its missing parents made as containers.
	_, err = session.Create(ctx, "/config/db", []byte("postgres://db:5432"), zkrecipes.WithParents(true))
	if errors.Is(err, zkrecipes.ErrNodeExists) {
		_, err = session.Set(ctx, "/config/db", []byte("postgres://db:5432"))
	}
	if err != nil {
		log.Fatal(err)
	}

	// A worker's presence: ephemeral, sequential, and protected, so that a
	// create whose reply is lost with the connection is found again
	// rather than made twice.
	me, err := session.Create(ctx, "/workers/w-", []byte("host-1"),
		zkrecipes.WithMode(zkrecipes.ModeEphemeralSequential), zkrecipes.WithProtection(true), zkrecipes.WithParents(true))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("registered as", me)

	data, stat, err := session.Get(ctx, "/config/db")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("db = %s (version %d)\n", data, stat.Version)
}

// A conditional update: the write goes through only over the version
// read, as a compare-and-set.
func ExampleSession_Set() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	for {
		data, stat, err := session.Get(ctx, "/config/replicas")
		if err != nil {
			log.Fatal(err)
		}
		next := append(data, '+')
		_, err = session.Set(ctx, "/config/replicas", next, zkrecipes.WithVersion(stat.Version))
		if errors.Is(err, zkrecipes.ErrBadVersion) {
			continue // another client wrote first: read again
		}
		if err != nil {
			log.Fatal(err) // ErrOutcomeUnknown: read before trying again
		}
		return
	}
}

// A guaranteed, recursive delete: if it cannot be confirmed now, it goes
// on in the background until the tree is gone, and Close says if it was
// still pending.
func ExampleSession_Delete() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	err = session.Delete(ctx, "/jobs/2024-06-01", zkrecipes.WithGuaranteed(true), zkrecipes.WithDeleteChildren(true))
	switch {
	case errors.Is(err, zkrecipes.ErrDeleteDeferred):
		log.Print("delete goes on in the background: ", err)
	case err != nil && !errors.Is(err, zkrecipes.ErrNoNode):
		log.Fatal(err)
	}
	if err := session.Close(); errors.Is(err, zkrecipes.ErrDeletePending) {
		log.Print(err) // the node may still be there
	}
}

// A transaction: both writes, or neither.
func ExampleSession_Multi() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers(), zkrecipes.WithNamespace("app"))
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	res, err := session.Multi(ctx,
		zkrecipes.CheckOp("/config", zkrecipes.WithVersion(3)),
		zkrecipes.SetOp("/config/db", []byte("postgres://db2:5432")),
		zkrecipes.CreateOp("/config/log/change-", []byte("db moved"), zkrecipes.WithMode(zkrecipes.ModePersistentSequential)))
	if err != nil {
		log.Fatal(err) // errors.Is(err, zkrecipes.ErrBadVersion): /config changed since version 3
	}
	fmt.Println("logged as", res[2].Path)
}

// A fenced write: it goes through only while the lock is held, so that a
// holder that lost the lock without knowing yet (a long pause, a cut-off
// connection) cannot overwrite its successor's work. Paths are relative
// to the namespace, the lease's check included.
func ExampleLease_Check() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers(), zkrecipes.WithNamespace("app"))
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	lease, err := zkrecipes.NewMutex(session, "/locks/report").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())

	_, err = session.Multi(ctx, lease.Check(), zkrecipes.SetOp("/report/latest", []byte("2024-06-01")))
	switch {
	case errors.Is(err, zkrecipes.ErrLockLost):
		log.Print("no longer the holder; nothing written")
	case err != nil:
		log.Fatal(err)
	}
}

// The reads ZooKeeper 3.6 and 3.7 added: what this session holds, how big
// a tree is, and who the server takes the session for.
func ExampleSession_WhoAmI() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers(), zkrecipes.WithDigestAuth("reporter", "secret"))
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	ids, err := session.WhoAmI(ctx)
	if err != nil {
		log.Fatal(err) // ErrServerTooOld before ZooKeeper 3.7
	}
	fmt.Println(ids) // e.g. [{ip 10.0.0.7} {digest reporter}]

	mine, err := session.Ephemerals(ctx, "/")
	if err != nil {
		log.Fatal(err)
	}
	n, err := session.CountDescendants(ctx, "/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(mine), "ephemeral nodes of this session;", n, "nodes in all")
}
