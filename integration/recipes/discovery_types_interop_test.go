package recipes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
)

// curatorTypes asks the DiscoveryPeer's Curator 5.4 queryForInstances for
// the service and returns the type of each instance, by ID. The peer's
// answer is an error, failing the test, when one instance breaks the
// listing.
func curatorTypes(t *testing.T, cur *curatorView, service string) map[string]string {
	t.Helper()
	var got []javaInstance
	require.NoError(t, json.Unmarshal([]byte(strings.Join(cur.ask(t, "INSTANCES", "query", service), " ")), &got))
	out := map[string]string{}
	for _, j := range got {
		out[j.ID] = j.ServiceType
	}
	return out
}

// Whatever Type a Go instance is registered with, and re-registered with,
// Curator 5.4's queryForInstances reads the whole service: the four types
// Curator knows are written as such, and any other is refused before it
// is written.
func TestInterop_NoServiceTypeGoWritesBreaksCuratorsListing(t *testing.T) {
	base := testPath(t)
	cur := startDiscoveryPeer(t, base)
	cl := connect(t, server(t), nil)
	d := discovery.New(cl.Session, base)
	defer d.Close(context.Background())
	ctx := ctxT(t, 30*time.Second)
	want := map[string]string{}
	for _, typ := range []discovery.ServiceType{"", discovery.Dynamic, discovery.Static, discovery.Permanent} {
		id := "go-" + strings.ToLower(string(typ))
		require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: id, Address: "127.0.0.1", Port: 1, Type: typ}))
		want[id] = string(typ)
		if typ == "" {
			want[id] = "DYNAMIC"
		}
	}
	assert.Equal(t, want, curatorTypes(t, cur, "api"))

	for _, typ := range []discovery.ServiceType{"dynamic", "EPHEMERAL", "X"} {
		err := d.Register(ctx, discovery.Instance{Name: "api", ID: "bad", Address: "127.0.0.1", Port: 1, Type: typ})
		assert.ErrorIs(t, err, discovery.ErrBadType)
		err = d.Update(ctx, discovery.Instance{Name: "api", ID: "go-static", Address: "127.0.0.1", Port: 1, Type: typ})
		assert.ErrorIs(t, err, discovery.ErrBadType)
		assert.Equal(t, want, curatorTypes(t, cur, "api"), "after type %q was refused", typ)
	}

	// A new Type on re-registration is what Curator reads.
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "go-static", Address: "127.0.0.1", Port: 1, Type: discovery.Dynamic}))
	want["go-static"] = "DYNAMIC"
	assert.Equal(t, want, curatorTypes(t, cur, "api"))
}
