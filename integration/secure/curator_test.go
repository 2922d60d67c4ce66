package secure_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// A Curator 5.4 client logged in by SASL (JAAS DigestLoginModule, as
// alice) and a zkrecipes Session (DigestMD5 as alice) share one lock path
// on an enforcing server, every node under sasl:alice: mutual exclusion
// holds across both, and bob can read none of it.
func TestSASLCuratorAndZkrecipesShareALockUnderSASLACL(t *testing.T) {
	srv := enforced.get(t)
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas-client.conf")
	require.NoError(t, os.WriteFile(jaas, []byte(`Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="alice"
  password="alice-secret";
};
`), 0o600))
	logPath := filepath.Join(dir, "shared.log")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	line := func(fields ...string) {
		_, err := f.WriteString(strings.Join(fields, " ") + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
		assert.NoError(t, err)
	}

	path := testPath(t)
	const hold = 20 * time.Millisecond
	cur := peers.Start(t, peers.Curator, "mutex", "--servers", srv.Addr, "--path", path, "--id", "cur",
		"--duration", "6s", "--hold-ms", strconv.Itoa(int(hold/time.Millisecond)), "--log", logPath,
		"--jaas", jaas, "--acl", "sasl:alice")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), " cur ")
	}, time.Minute, 10*time.Millisecond, "the Curator peer never acquired")

	s := connect(t, srv.Addr, alice(), zr.WithACL([]zr.ACL{zr.SASLACL("alice", zr.PermAll)}))
	m := zr.NewMutex(s, path)
	acquired := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		l, err := m.Acquire(ctx)
		cancel()
		require.NoError(t, err)
		acquired++
		p := l.Path()
		line("ENTER", "zr", p[len(p)-10:])
		time.Sleep(hold) // holds the lock; orders nothing
		line("EXIT", "zr")
		require.NoError(t, l.Release(context.Background()))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = cur.Wait(ctx)
	require.NoError(t, err)
	rep, err := peers.CheckLog(logPath)
	require.NoError(t, err)
	require.Empty(t, rep.Violations)
	require.Empty(t, rep.Open)
	require.Positive(t, rep.Acquisitions["cur"])
	require.Positive(t, acquired)
	t.Logf("acquisitions %v", rep.Acquisitions)

	// The lock path is alice's, Curator's nodes included.
	acl, _, err := s.Conn().GetACL(path)
	require.NoError(t, err)
	require.Equal(t, "sasl", acl[0].Scheme, fmt.Sprint(acl))
	require.Equal(t, "alice", acl[0].ID)
	b := connect(t, srv.Addr, bob())
	_, err = zr.NewMutex(b, path).Acquire(ctx)
	require.ErrorIs(t, err, zk.ErrNoAuth)
}
