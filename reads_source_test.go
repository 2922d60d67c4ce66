package zkrecipes

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// zkReads are the methods of go-zookeeper's *zk.Conn that read: each names
// a path, which the server drops the connection for when the request
// exceeds its jute.maxbuffer.
var zkReads = []string{"Get", "GetW", "Children", "ChildrenW", "Exists", "ExistsW", "GetACL", "Sync"}

// readsFile is the one file allowed to call them: the request seam
// (call, send, traced), which checks the path's size before sending,
// reports the request to the Tracer and Observer, and types a refusal.
const readsFile = "requests.go"

// Every read the module sends passes through the request seam, today's
// recipes and tomorrow's, discovery's too: no non-test file of the module
// other than requests.go calls a read method of *zk.Conn, whatever the
// expression that holds the connection (Session.Conn() included).
func TestEveryReadGoesThroughTheSeam(t *testing.T) {
	bad, allowed := zkConnCallsOutside(t, zkReads, readsFile)
	require.Empty(t, bad, "reads sent around the request seam of %s: read with call, send or traced "+
		"(or, outside the root package, the Session's GetData and GetChildren)", readsFile)
	require.Positive(t, allowed, "%s calls no read method of *zk.Conn: the check found nothing to look for", readsFile)
}
