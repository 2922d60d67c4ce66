package discovery_test

import (
	"context"
	"encoding/json"
	"log"
	"net/http"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
)

// A service registers itself; a client finds an instance and reports the
// ones that fail, which are then left out for a while.
func Example() {
	ctx := context.Background()
	session, err := zkrecipes.Connect(ctx, []string{"127.0.0.1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	d := discovery.New(session, "/services")
	defer d.Close(context.Background())

	// The service side: found by Java's ServiceDiscovery<Map> too.
	err = d.Register(ctx, discovery.Instance{Name: "orders", ID: "orders-1", Address: "127.0.0.1", Port: 8080,
		URISpec: "{scheme}://{address}:{port}", Payload: json.RawMessage(`{"zone":"eu-1"}`)})
	if err != nil {
		log.Fatal(err)
	}

	// The client side.
	orders := d.NewProvider("orders")
	defer orders.Close(context.Background())
	if err := orders.Start(ctx); err != nil {
		log.Fatal(err)
	}
	inst, err := orders.Instance()
	if err != nil {
		log.Fatal(err) // discovery.ErrNoInstance: nobody to call
	}
	uri, _ := inst.URI(nil)
	if _, err := http.Get(uri + "/orders"); err != nil {
		orders.NoteError(inst)
	}
}
