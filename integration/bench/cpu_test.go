package bench

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenerPIDFindsThisProcessListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	pid, err := ListenerPID(ln.Addr().String())
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), pid)

	_, err = ListenerPID("127.0.0.1:1") // nobody listens on port 1
	assert.Error(t, err)
}

func TestProcCPUGrowsWithWork(t *testing.T) {
	before, err := ProcCPU(os.Getpid())
	require.NoError(t, err)
	// Spin until 100 ms of CPU show, however busy the machine is; only a
	// ProcCPU that does not grow runs into the deadline.
	var after time.Duration
	x := 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		for range 1_000_000 {
			x++
		}
		if after, err = ProcCPU(os.Getpid()); err != nil || after-before >= 100*time.Millisecond {
			break
		}
	}
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after-before, 100*time.Millisecond, "CPU time grows while this goroutine spins (%d loops)", x)

	st, err := statCPU(os.Getpid())
	require.NoError(t, err)
	now, err := ProcCPU(os.Getpid())
	require.NoError(t, err)
	assert.InDelta(t, now.Seconds(), st.Seconds(), 0.1, "schedstat and stat agree")
}
