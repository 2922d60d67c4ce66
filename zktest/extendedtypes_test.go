package zktest_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/zktest"
	"github.com/zkrecipes/zkrecipes/zktest/internal/testclient"
)

func TestExtendedTypes_OnByDefaultSoATTLNodeIsMade(t *testing.T) {
	c := zktest.Start(t)
	conn, _ := testclient.Connect(t, c.Servers(), 4*time.Second, nil)
	p, err := conn.CreateTTL("/ttl", []byte("x"), zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Minute)
	require.NoError(t, err)
	require.Equal(t, "/ttl", p)
	_, st, err := conn.Get("/ttl")
	require.NoError(t, err)
	// The server keeps the TTL in the node's ephemeralOwner, but shows
	// clients 0 there, as for any persistent node.
	require.Zero(t, st.EphemeralOwner)
}

func TestExtendedTypes_OffMakesTheServerRefuseATTLCreate(t *testing.T) {
	c := zktest.Start(t, zktest.WithExtendedTypes(false))
	conn, _ := testclient.Connect(t, c.Servers(), 4*time.Second, nil)
	_, err := conn.CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Minute)
	t.Logf("TTL create refused with: %v", err)
	require.Error(t, err)
	_, err = conn.Create("/plain", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err, "the server serves other creates")
}
