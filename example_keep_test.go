package zkrecipes_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes"
)

// A node that stays while the service runs: made again after a session
// expiry or a deletion, and a readiness flag that tells the truth.
func ExamplePersistentNode() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	node := zkrecipes.NewPersistentNode(session, "/workers/worker-1", []byte("10.0.0.7:9000"))
	if err := node.Start(ctx); err != nil { // returns once the node is in place
		log.Fatal(err)
	}
	defer node.Close(context.Background()) // deletes the node
	for {
		st, changed := node.Status()
		log.Printf("in place: %v (%s)", st.InPlace, st.Path) // e.g. a readiness probe
		<-changed
	}
}

// Membership of a group, with every member's data.
func ExampleGroupMember() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, servers())
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	m := zkrecipes.NewGroupMember(session, "/groups/cache", "node-1", []byte("10.0.0.7"))
	if err := m.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer m.Close(context.Background())
	for {
		members, changed := m.Members()
		log.Printf("members: %d", len(members))
		<-changed
	}
}
