package zkrecipes

import (
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Issue 42, defect 6: over a go-zookeeper the wire layer was not tested
// with, Connect runs without the layer and warns once.
func TestZKConnectRunsWithoutTheWireLayerOverAnUntestedGoZookeeper(t *testing.T) {
	old := readBuildInfo
	t.Cleanup(func() { readBuildInfo = old })
	readBuildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Deps: []*debug.Module{{Path: "github.com/go-zookeeper/zk", Version: "v1.0.3"}}}, true
	}
	buf := &syncBuffer{}
	_, s := zkSession(t, 20*time.Second, WithLogger(slog.New(slog.NewTextHandler(buf, nil))))
	assert.Nil(t, s.wire, "no wire layer")
	assert.Equal(t, 1, strings.Count(buf.String(), "not one the wire layer was tested with"), buf.String())
	assert.Contains(t, buf.String(), "v1.0.3")
}

// syncBuffer collects log lines; safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
