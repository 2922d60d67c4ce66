package recipes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/wire"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// atLeast39 tells whether c's server is ZooKeeper 3.9 or later (srvr): the
// first release that removes a persistent watch by its type
// (ZOOKEEPER-4472) and keeps one watch per mode on a path (ZOOKEEPER-4466).
// scripts/test.sh runs these tests against Debian's 3.8 and against 3.9
// (ZK_TEST_VERSION=3.9).
func atLeast39(t *testing.T, c *zktest.Cluster) bool {
	t.Helper()
	m, err := zktest.Srvr(ctxT(t, 10*time.Second), c.Servers()[0])
	require.NoError(t, err)
	v := m["Zookeeper version"]
	var major, minor int
	_, err = fmt.Sscanf(v, "%d.%d", &major, &minor)
	require.NoError(t, err, "srvr's version %q", v)
	return major > 3 || major == 3 && minor >= 9
}

// A persistent watch's Close takes the server's own way out: on 3.9 and
// later the removal by the watch's type, which touches nothing else, and no
// re-setting of the watch behind the Session's one-shot watches on its
// path; on 3.6 to 3.8 the workaround (remove every watch on the path, put
// the others back; set the persistent watch again behind a one-shot one).
// Either way the Session's other watches are on the server as before.
func TestPersistentWatchCloseRemovesItTheWayTheServerAllows(t *testing.T) {
	for _, recursive := range []bool{false, true} {
		t.Run(fmt.Sprintf("recursive=%v", recursive), func(t *testing.T) {
			c := server(t)
			s := connect(t, c, nil)
			other := raw(t, c)
			p := testPath(t)
			freshPath(t, other, p)
			mkdirs(t, other, p)
			sid := s.Conn().SessionID()
			// One-shot watches of the same Session on the watch's path.
			_, _, data, err := s.Conn().GetW(p)
			require.NoError(t, err)
			_, _, kids, err := s.Conn().ChildrenW(p)
			require.NoError(t, err)
			watches := sessionWatches(t, c, sid)
			require.Equal(t, []string{p}, watches)
			count := mntrInt(t, c, "zk_watch_count")

			w := startWatch(t, s.Session, p, zr.WithRecursive(recursive))
			before := wire.ReadCounts()
			// A one-shot watch set again after the persistent watch: on 3.6
			// to 3.8 it turns the persistent watch back into a one-shot one,
			// unless that is set again behind it.
			_, _, again, err := s.Conn().GetW(p)
			require.NoError(t, err)
			v39 := atLeast39(t, c)
			if !v39 {
				// The re-arm is written behind the getData once its write
				// returns, which the getData's reply may beat; a Close
				// that came first would find nothing to set again.
				require.Eventually(t, func() bool { return wire.ReadCounts().ReArms > before.ReArms }, 10*time.Second, time.Millisecond,
					"set again behind the one-shot watch")
			}
			require.NoError(t, w.Close(context.Background()))
			after := wire.ReadCounts()
			if v39 {
				assert.Positive(t, after.TypedRemovals-before.TypedRemovals, "removed by its type")
				assert.Zero(t, after.AnyRemovals-before.AnyRemovals, "no removal of every watch on the path")
				assert.Zero(t, after.ReArms-before.ReArms, "not set again behind the one-shot watch")
			} else {
				assert.Positive(t, after.AnyRemovals-before.AnyRemovals, "removed with every watch on the path")
				assert.Positive(t, after.ReArms-before.ReArms, "set again behind the one-shot watch")
			}
			assert.Equal(t, watches, sessionWatches(t, c, sid), "the server holds the Session's watches as before")
			assert.Equal(t, count, mntrInt(t, c, "zk_watch_count"), "as many watches on the server as before")

			// The one-shot watches are still there and fire once.
			_, err = other.Set(p, []byte("x"), -1)
			require.NoError(t, err)
			_, err = other.Create(p+"/kid", nil, 0, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
			for name, ch := range map[string]<-chan zk.Event{"data": data, "data again": again, "children": kids} {
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Fatalf("the one-shot %s watch did not fire after Close", name)
				}
			}
			assert.Empty(t, sessionWatches(t, c, sid), "nothing left once they fired")
		})
	}
}
