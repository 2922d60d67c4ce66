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

// startDiscoveryPeer starts a DiscoveryPeer (integration/peers/java):
// Curator's own ServiceDiscovery on base, asked one command at a time.
func startDiscoveryPeer(t *testing.T, base string) *curatorView {
	t.Helper()
	return startLinePeer(t, "DiscoveryPeer", server(t).ConnectString(), base)
}

// javaInstance is an instance as the DiscoveryPeer describes it.
type javaInstance struct {
	Name         string            `json:"name"`
	ID           string            `json:"id"`
	Address      string            `json:"address"`
	Port         *int              `json:"port"`
	SSLPort      *int              `json:"sslPort"`
	Payload      map[string]string `json:"payload"`
	PayloadClass string            `json:"payloadClass"`
	RegTime      int64             `json:"registrationTimeUTC"`
	ServiceType  string            `json:"serviceType"`
	URI          string            `json:"uri"`
	Enabled      bool              `json:"enabled"`
}

func TestInterop_GoRegisteredInstanceIsFoundByCuratorDiscovery(t *testing.T) {
	base := testPath(t)
	cur := startDiscoveryPeer(t, base)
	cl := connect(t, server(t), nil)
	d := discovery.New(cl.Session, base)
	defer d.Close(context.Background())
	ctx := ctxT(t, 30*time.Second)
	reg := time.UnixMilli(1700000000123)
	require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "go-1", Address: "127.0.0.1", Port: 8080,
		Payload: json.RawMessage(`{"zone":"eu-1"}`), RegistrationTime: reg, URISpec: "{scheme}://{address}:{port}/v1"}))

	f := cur.ask(t, "INSTANCES", "query", "api")
	var got []javaInstance
	require.NoError(t, json.Unmarshal([]byte(strings.Join(f, " ")), &got))
	require.Len(t, got, 1)
	j := got[0]
	assert.Equal(t, "api", j.Name)
	assert.Equal(t, "go-1", j.ID)
	assert.Equal(t, "127.0.0.1", j.Address)
	require.NotNil(t, j.Port)
	assert.Equal(t, 8080, *j.Port)
	assert.Nil(t, j.SSLPort)
	assert.Equal(t, map[string]string{"zone": "eu-1"}, j.Payload)
	assert.Equal(t, "java.util.LinkedHashMap", j.PayloadClass)
	assert.Equal(t, reg.UnixMilli(), j.RegTime)
	assert.Equal(t, "DYNAMIC", j.ServiceType)
	assert.Equal(t, "http://127.0.0.1:8080/v1", j.URI)
	assert.True(t, j.Enabled)

	assert.Equal(t, []string{"go-1"}, cur.ask(t, "CACHE", "cache", "api", "1"), "Curator's ServiceCache sees it")
	assert.Equal(t, []string{"go-1"}, cur.ask(t, "PROVIDER", "provider", "api"), "Curator's ServiceProvider chooses it")

	// An update, then an unregistration, reach Curator.
	require.NoError(t, d.Update(ctx, discovery.Instance{Name: "api", ID: "go-1", Address: "127.0.0.1", Port: 9090}))
	require.NoError(t, json.Unmarshal([]byte(strings.Join(cur.ask(t, "INSTANCES", "query", "api"), " ")), &got))
	require.Len(t, got, 1)
	require.NotNil(t, got[0].Port)
	assert.Equal(t, 9090, *got[0].Port)
	require.NoError(t, d.Unregister(ctx, "api", "go-1"))
	assert.Equal(t, []string{"INSTANCES", "[]"}, append([]string{"INSTANCES"}, cur.ask(t, "INSTANCES", "query", "api")...))
}

func TestInterop_CuratorRegisteredInstanceIsFoundByGo(t *testing.T) {
	base := testPath(t)
	cur := startDiscoveryPeer(t, base)
	cl := connect(t, server(t), nil)
	d := discovery.New(cl.Session, base)
	ctx := ctxT(t, 30*time.Second)
	cache := d.NewCache("api")
	defer cache.Close(context.Background())
	require.NoError(t, cache.Start(ctx))

	cur.ask(t, "OK", "register", "api", "java-1", "127.0.0.1", "8081", "zone=us-2")
	awaitCache(t, cache, 5*time.Second, "java-1")
	insts, _ := cache.Instances()
	i := insts[0]
	assert.Equal(t, "api", i.Name)
	assert.Equal(t, "127.0.0.1", i.Address)
	assert.Equal(t, 8081, i.Port)
	assert.Equal(t, 0, i.SSLPort)
	assert.JSONEq(t, `{"zone":"us-2"}`, string(i.Payload))
	assert.Equal(t, "java.util.LinkedHashMap", i.PayloadClass)
	assert.Equal(t, discovery.Dynamic, i.Type)
	assert.False(t, i.Disabled)
	assert.WithinDuration(t, time.Now(), i.RegistrationTime, time.Minute)
	u, err := i.URI(nil)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8081/x", u)

	got, err := d.QueryForInstance(ctx, "api", "java-1")
	require.NoError(t, err)
	assert.Equal(t, i.Port, got.Port)
	names, err := d.QueryForNames(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"api"}, names)

	p := d.NewProvider("api")
	defer p.Close(context.Background())
	require.NoError(t, p.Start(ctx))
	chosen, err := p.Instance()
	require.NoError(t, err)
	assert.Equal(t, "java-1", chosen.ID)

	cur.ask(t, "OK", "unregister", "api", "java-1")
	awaitCache(t, cache, 5*time.Second)
}
