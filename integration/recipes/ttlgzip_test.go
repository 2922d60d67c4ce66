package recipes_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// Compression in Curator's format and TTL nodes in Curator's layout,
// against the real Curator jars (integration/peers/java/TtlGzipPeer.java)
// and real servers with and without extended types.

func hexOf(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	if s == "-" {
		return []byte{}
	}
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// compressible is data a compressed node is worth holding.
var compressible = []byte(strings.Repeat(`{"feature":"checkout","enabled":true,"percent":25}`+"\n", 200))

func TestCompression_ANodeCuratorWroteCompressedIsReadByOurCachesAndSharedValue(t *testing.T) {
	dir := testPath(t)
	cur := startLinePeer(t, "TtlGzipPeer", server(t).ConnectString())
	cur.ask(t, "OK", "writegz", dir+"/cfg", hexOf(compressible))
	raw := unhex(t, cur.ask(t, "DATA", "readraw", dir+"/cfg")[0])
	require.True(t, bytes.HasPrefix(raw, []byte{0x1f, 0x8b}), "Curator stored gzip")
	require.Less(t, len(raw), len(compressible)/10)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain := connect(t, server(t), nil).Session
	gz := connect(t, server(t), nil, zr.WithCompression(true)).Session

	// SharedValue: by its own option on a plain Session, and by the
	// Session's option.
	v, err := zr.NewSharedValue(plain, dir+"/cfg", nil, zr.WithValueCompression(true)).Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, compressible, v.Value)
	v, err = zr.NewSharedValue(gz, dir+"/cfg", nil).Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, compressible, v.Value)
	// Without compression the stored bytes are seen as they are.
	v, err = zr.NewSharedValue(plain, dir+"/cfg", nil).Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, raw, v.Value)

	// NodeCache, then a TreeCache that sees Curator's change.
	nc := zr.NewNodeCache(plain, dir+"/cfg", zr.WithCacheCompression(true))
	require.NoError(t, nc.Start(ctx))
	defer nc.Close(context.Background())
	n, ok := nc.Get()
	require.True(t, ok)
	assert.Equal(t, compressible, n.Data)
	tc := zr.NewTreeCache(gz, dir)
	require.NoError(t, tc.Start(ctx))
	defer tc.Close(context.Background())
	n, ok = tc.Get(dir + "/cfg")
	require.True(t, ok)
	assert.Equal(t, compressible, n.Data)
	cur.ask(t, "OK", "writegz", dir+"/cfg", hexOf([]byte("v2")))
	require.Eventually(t, func() bool {
		n, ok := tc.Get(dir + "/cfg")
		return ok && string(n.Data) == "v2"
	}, 30*time.Second, 20*time.Millisecond, "the TreeCache saw Curator's compressed update")
	require.Eventually(t, func() bool {
		n, ok := nc.Get()
		return ok && string(n.Data) == "v2"
	}, 30*time.Second, 20*time.Millisecond, "the NodeCache saw Curator's compressed update")
}

func TestCompression_WhatWeWriteCompressedIsReadByCuratorsDecompressed(t *testing.T) {
	dir := testPath(t)
	cur := startLinePeer(t, "TtlGzipPeer", server(t).ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gz := connect(t, server(t), nil, zr.WithCompression(true)).Session
	if err := gz.Delete(ctx, dir+"/value"); err != nil {
		require.ErrorIs(t, err, zr.ErrNoNode) // left by an earlier run (-count=2), or none
	}

	sv := zr.NewSharedValue(gz, dir+"/value", []byte("seed"))
	_, err := sv.Get(ctx) // creates the node with the seed, compressed
	require.NoError(t, err)
	assert.Equal(t, "seed", string(unhex(t, cur.ask(t, "DATA", "readgz", dir+"/value")[0])))
	_, err = sv.Set(ctx, compressible)
	require.NoError(t, err)
	assert.Equal(t, compressible, unhex(t, cur.ask(t, "DATA", "readgz", dir+"/value")[0]))
	assert.Equal(t, compressible, unhex(t, cur.ask(t, "DATA", "cachegz", dir+"/value")[0]), "Curator's NodeCache(dataIsCompressed)")
	raw := unhex(t, cur.ask(t, "DATA", "readraw", dir+"/value")[0])
	assert.Equal(t, zr.GzipCompress(compressible), raw, "stored as GzipCompress makes it")
	_, err = sv.Set(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "-", cur.ask(t, "DATA", "readgz", dir+"/value")[0], "empty data")
}

func TestCompression_DataWrittenUncompressedIsRefusedBySharedValueAndHeldAsStoredByCaches(t *testing.T) {
	dir := testPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain := connect(t, server(t), nil).Session
	_, err := zr.NewSharedValue(plain, dir+"/v", nil).Set(ctx, []byte("plain text"))
	require.NoError(t, err)

	gz := zr.NewSharedValue(plain, dir+"/v", nil, zr.WithValueCompression(true))
	_, err = gz.Get(ctx)
	require.ErrorIs(t, err, zr.ErrNotCompressed)
	assert.Contains(t, err.Error(), dir+"/v")
	err = gz.Watch(ctx, func(zr.VersionedValue) { t.Error("Watch called fn with undecodable data") })
	require.ErrorIs(t, err, zr.ErrNotCompressed)

	nc := zr.NewNodeCache(plain, dir+"/v", zr.WithCacheCompression(true))
	require.NoError(t, nc.Start(ctx))
	defer nc.Close(context.Background())
	n, ok := nc.Get()
	require.True(t, ok, "the node is in the cache")
	assert.Equal(t, "plain text", string(n.Data), "with its data as stored")
}

// ttlServer starts a server of the test's own that looks for expired TTL
// and empty container nodes every 200 ms (the default is every minute).
func ttlServer(t *testing.T, opts ...zktest.Option) *zktest.Cluster {
	flags := []string{"-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
		"-Dznode.container.checkIntervalMs=200"}
	return zktest.Start(t, append([]zktest.Option{zktest.WithJVMFlags(flags...)}, opts...)...)
}

func TestPersistentTtlNode_KeepsCuratorsLayoutAndCuratorKeepsOurs(t *testing.T) {
	dir := testPath(t)
	freshPath(t, raw(t, server(t)), dir) // Curator's node of an earlier run stays until it expires
	cur := startLinePeer(t, "TtlGzipPeer", server(t).ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := connect(t, server(t), nil).Session

	// Ours: the node holds the data and has the one child "touch".
	ours := zr.NewPersistentTtlNode(s, dir+"/go", 2*time.Second, []byte("go data"))
	require.NoError(t, ours.Start(ctx))
	require.NoError(t, ours.WaitInPlace(ctx))
	require.Eventually(t, func() bool {
		kids, _, err := s.Children(ctx, dir+"/go")
		return err == nil && len(kids) == 1
	}, 30*time.Second, 50*time.Millisecond, "the first touch")
	st := cur.ask(t, "STAT", "stat", dir+"/go")
	assert.Equal(t, []string{"0", "1", "touch,"}, st, "Curator sees a node of no session with its touch child")
	assert.Equal(t, "go data", string(unhex(t, cur.ask(t, "DATA", "readraw", dir+"/go")[0])))

	// Curator's: the same layout, read by us (its first touch comes after
	// ttl/2).
	cur.ask(t, "OK", "ttlstart", dir+"/java", "2000", hexOf([]byte("java data")))
	require.Eventually(t, func() bool {
		kids, _, err := s.Children(ctx, dir+"/java")
		return err == nil && len(kids) == 1 && kids[0] == zr.TTLTouchChild
	}, 30*time.Second, 50*time.Millisecond, "Curator's touch child")
	data, _, err := s.Get(ctx, dir+"/java")
	require.NoError(t, err)
	assert.Equal(t, "java data", string(data))

	// Both keep their nodes while they run (the shared server looks for
	// expired nodes every minute: the expiry itself is the next test's).
	for _, p := range []string{dir + "/go", dir + "/java"} {
		kids, _, err := s.Children(ctx, p)
		require.NoError(t, err, p)
		assert.Equal(t, []string{zr.TTLTouchChild}, kids, p)
	}
	// Close deletes ours, child first; Curator's close leaves its node to
	// expire.
	require.NoError(t, ours.Close(ctx))
	cur.ask(t, "NONODE", "stat", dir+"/go")
	cur.ask(t, "OK", "ttlclose", dir+"/java")
	st2, err := s.Exists(ctx, dir+"/java")
	require.NoError(t, err)
	require.NotNil(t, st2, "Curator's closed PersistentTtlNode stays until it expires")
}

func TestPersistentTtlNode_ExpiresOnceItsOwnerStopsTouchingAndPersistentNodeRemakesIt(t *testing.T) {
	c := ttlServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watcher := connect(t, c, nil).Session
	owner := connect(t, c, nil).Session

	// A TTL of 3s: touched every 1.5s, the child has 1.5s of slack for a
	// touch a busy machine delays.
	n := zr.NewPersistentTtlNode(owner, "/ttl/node", 3*time.Second, []byte("alive"))
	require.NoError(t, n.Start(ctx))
	require.NoError(t, n.WaitInPlace(ctx))
	require.Eventually(t, func() bool {
		kids, _, err := watcher.Children(ctx, "/ttl/node")
		return err == nil && len(kids) == 1
	}, 30*time.Second, 50*time.Millisecond)
	// Kept alive past its TTL, checked every 200 ms by the server.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		st, err := watcher.Exists(ctx, "/ttl/node")
		require.NoError(t, err)
		require.NotNil(t, st, "the touched node stays")
		time.Sleep(200 * time.Millisecond)
	}
	// The owner goes away without deleting anything: both TTL nodes expire.
	require.NoError(t, owner.Close())
	require.ErrorIs(t, n.Close(ctx), zr.ErrNodeLeft)
	require.Eventually(t, func() bool {
		st, err := watcher.Exists(ctx, "/ttl/node")
		return err == nil && st == nil
	}, 60*time.Second, 100*time.Millisecond, "the node expired once nothing touched it")

	// A PersistentNode in a TTL mode is made again once it expires.
	pn := zr.NewPersistentNode(watcher, "/ttl/kept", []byte("x"), zr.WithCreateMode(zr.ModePersistentWithTTL), zr.WithNodeTTL(500*time.Millisecond))
	require.NoError(t, pn.Start(ctx))
	require.NoError(t, pn.WaitInPlace(ctx))
	first, err := watcher.Exists(ctx, "/ttl/kept")
	require.NoError(t, err)
	require.NotNil(t, first)
	require.Eventually(t, func() bool {
		st, err := watcher.Exists(ctx, "/ttl/kept")
		return err == nil && st != nil && st.Czxid != first.Czxid
	}, 60*time.Second, 100*time.Millisecond, "expired, and made again")
	require.NoError(t, pn.Close(ctx))

	// A PersistentNode in container mode: the server deletes it once its
	// last child is gone, and it is made again.
	cn := zr.NewPersistentNode(watcher, "/ttl/box", nil, zr.WithCreateMode(zr.ModeContainer))
	require.NoError(t, cn.Start(ctx))
	require.NoError(t, cn.WaitInPlace(ctx))
	box, err := watcher.Exists(ctx, "/ttl/box")
	require.NoError(t, err)
	require.NotNil(t, box)
	_, err = watcher.Create(ctx, "/ttl/box/item", nil)
	require.NoError(t, err)
	require.NoError(t, watcher.Delete(ctx, "/ttl/box/item"))
	require.Eventually(t, func() bool {
		st, err := watcher.Exists(ctx, "/ttl/box")
		return err == nil && st != nil && st.Czxid != box.Czxid
	}, 60*time.Second, 100*time.Millisecond, "the emptied container was deleted by the server and made again")
	require.NoError(t, cn.Close(ctx))
}

func TestTTL_AServerWithoutExtendedTypesRefusesWithErrTTLUnsupported(t *testing.T) {
	c := zktest.Start(t, zktest.WithExtendedTypes(false))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := connect(t, c, nil).Session

	// Start waits for the node and returns the refusal, which no retry
	// mends; what it began is stopped, and Close has nothing to do.
	n := zr.NewPersistentTtlNode(s, "/ttl/node", time.Minute, []byte("x"))
	err := n.Start(ctx)
	require.ErrorIs(t, err, zr.ErrTTLUnsupported)
	assert.Contains(t, err.Error(), "extendedTypesEnabled")
	require.NoError(t, n.Close(ctx), "no node was made")

	pn := zr.NewPersistentNode(s, "/ttl/kept", nil, zr.WithCreateMode(zr.ModePersistentSequentialWithTTL), zr.WithNodeTTL(time.Minute))
	require.ErrorIs(t, pn.Start(ctx), zr.ErrTTLUnsupported)
	require.NoError(t, pn.Close(ctx))

	// The node API's Create says the same.
	_, err = s.Create(ctx, "/ttl/made", nil, zr.WithMode(zr.ModePersistentWithTTL), zr.WithTTL(time.Minute), zr.WithParents(true))
	require.ErrorIs(t, err, zr.ErrTTLUnsupported)

	// The connection serves on: the refusal is an answer, not a drop.
	_, err = s.Create(ctx, "/ttl/plain", nil, zr.WithParents(true))
	require.NoError(t, err)
	kids, _, err := s.Children(ctx, "/ttl")
	require.NoError(t, err)
	assert.Equal(t, []string{"plain"}, kids, "nothing but the plain node")
}

func TestDiscovery_CompressedRegistrationsAreReadWithPlainOnesByACompressingDiscovery(t *testing.T) {
	c := server(t)
	base := testPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gz := discovery.New(connect(t, c, nil).Session, base, discovery.WithCompression(true))
	defer gz.Close(context.Background())
	plain := discovery.New(connect(t, c, nil).Session, base)
	defer plain.Close(context.Background())

	big := json.RawMessage(`{"tags":"` + strings.Repeat("abcdefgh", 500) + `"}`)
	require.NoError(t, gz.Register(ctx, discovery.Instance{Name: "api", ID: "gz", Address: "127.0.0.1", Port: 1, Payload: big}))
	require.NoError(t, plain.Register(ctx, discovery.Instance{Name: "api", ID: "plain", Address: "127.0.0.1", Port: 2}))
	data, _, err := connect(t, c, nil).Get(ctx, base+"/api/gz")
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte{0x1f, 0x8b}), "stored gzip-compressed")
	require.Less(t, len(data), len(big)/4)

	ins, err := gz.QueryForInstances(ctx, "api")
	require.NoError(t, err)
	require.Len(t, ins, 2, "both the compressed and the plain registration")
	assert.JSONEq(t, string(big), string(ins[0].Payload))
	sc := gz.NewCache("api")
	require.NoError(t, sc.Start(ctx))
	defer sc.Close(context.Background())
	insts, _ := sc.Instances()
	assert.Len(t, insts, 2, "the cache reads both forms too")

	// A discovery without compression skips the compressed one as a bad
	// instance, as Curator's would fail on it.
	ins, err = plain.QueryForInstances(ctx, "api")
	require.NoError(t, err)
	require.Len(t, ins, 1)
	assert.Equal(t, "plain", ins[0].ID)
}

func TestPersistentTtlNode_OursAndCuratorsStayPastTheirTTLWhileRunningAndCuratorsExpiresAfterItsClose(t *testing.T) {
	c := ttlServer(t)
	cur := startLinePeer(t, "TtlGzipPeer", c.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := connect(t, c, nil).Session

	ours := zr.NewPersistentTtlNode(s, "/svc/go", time.Second, []byte("go"))
	require.NoError(t, ours.Start(ctx))
	require.NoError(t, ours.WaitInPlace(ctx))
	cur.ask(t, "OK", "ttlstart", "/svc/java", "1000", hexOf([]byte("java")))
	// Both alive over several TTLs on a server that looks for expired
	// nodes every 200 ms, each seen by the other side.
	until := time.Now().Add(4 * time.Second)
	for time.Now().Before(until) {
		st := cur.ask(t, "STAT", "stat", "/svc/go")
		require.Equal(t, "1", st[1], "Curator sees ours with its touch child")
		java, err := s.Exists(ctx, "/svc/java")
		require.NoError(t, err)
		require.NotNil(t, java, "we see Curator's")
		time.Sleep(100 * time.Millisecond) // polls the state over time; nothing waits on another goroutine
	}
	// Curator's close deletes nothing: its node expires, child first.
	cur.ask(t, "OK", "ttlclose", "/svc/java")
	require.Eventually(t, func() bool {
		st, err := s.Exists(ctx, "/svc/java")
		return err == nil && st == nil
	}, 60*time.Second, 100*time.Millisecond, "Curator's closed node expired")
	st, err := s.Exists(ctx, "/svc/go")
	require.NoError(t, err)
	require.NotNil(t, st, "ours, still touched, stays")
	require.NoError(t, ours.Close(ctx))
}
