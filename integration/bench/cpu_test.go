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
	x := 0
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		x++
	}
	after, err := ProcCPU(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after-before, 100*time.Millisecond, "200 ms of spinning (%d loops)", x)

	st, err := statCPU(os.Getpid())
	require.NoError(t, err)
	assert.InDelta(t, after.Seconds(), st.Seconds(), 0.1, "schedstat and stat agree")
}
