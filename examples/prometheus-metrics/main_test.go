package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// scrape sums the samples of /metrics whose series name is name and whose
// labels contain every one of labels (`key="value"`).
func scrape(t *testing.T, url, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue next
			}
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err, line)
		sum += v
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return sum
}

// The service's /metrics shows its lock waits, leadership and cache load as
// it works, and counts the leadership lost when its session expires, then
// the reconnection.
func TestServiceMetricsMoveAndCountALossAfterAnExpiredSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := zktest.StartCluster(ctx)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no ZooKeeper: %v", err)
		}
		t.Skipf("no ZooKeeper: %v", err)
	}
	defer func() { _ = c.Close() }()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	capture := &zktest.SessionCapture{}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(sctx, config{servers: c.Servers(), root: "/examples/prometheus-metrics", workers: 3,
			session: []zr.SessionOption{zr.WithSessionTimeout(4 * time.Second), zr.WithDialer(capture.Dialer())}}, ln)
	}()
	defer func() {
		stop()
		require.ErrorIs(t, <-done, context.Canceled)
	}()
	url := "http://" + ln.Addr().String() + "/metrics"

	waits := func() float64 {
		return scrape(t, url, "zookeeper_lock_wait_duration_seconds_count", `zookeeper_recipe_name="job-lock"`)
	}
	require.Eventually(t, func() bool { return waits() >= 10 }, 30*time.Second, 50*time.Millisecond, "lock waits recorded")
	require.Positive(t, scrape(t, url, "zookeeper_lock_wait_duration_seconds_bucket", `zookeeper_recipe_name="job-lock"`, `le="+Inf"`))
	require.Positive(t, scrape(t, url, "zookeeper_client_operation_duration_seconds_count", `zookeeper_operation_name="create"`))
	require.Positive(t, scrape(t, url, "zookeeper_leader_changes_total", `zookeeper_leader_change="gained"`, `zookeeper_recipe_name="scheduler"`))
	require.Equal(t, 1.0, scrape(t, url, "zookeeper_cache_syncs_total", `zookeeper_cache_sync="initial"`))
	require.Equal(t, 1.0, scrape(t, url, "zookeeper_session_state", `zookeeper_session_state="CONNECTED"`))
	require.Zero(t, scrape(t, url, "zookeeper_lease_lost_total"))
	before := waits()
	require.Eventually(t, func() bool { return waits() > before }, 10*time.Second, 20*time.Millisecond, "waits keep moving")

	// The leader holds its lease all along: the expiry loses it.
	require.NoError(t, c.ExpireSession(ctx, capture))
	require.Eventually(t, func() bool {
		return scrape(t, url, "zookeeper_lease_lost_total", `zookeeper_recipe_kind="election"`) >= 1
	}, 30*time.Second, 50*time.Millisecond, "the lost leadership counted")
	require.Eventually(t, func() bool { return scrape(t, url, "zookeeper_session_reconnects_total") >= 1 }, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		return scrape(t, url, "zookeeper_leader_changes_total", `zookeeper_leader_change="gained"`) >= 2
	}, 30*time.Second, 50*time.Millisecond, "leadership taken again on the new session")
	t.Logf("losses by cause: suspended %v, expired %v, session_changed %v",
		scrape(t, url, "zookeeper_lease_lost_total", `zookeeper_lease_end_cause="suspended"`),
		scrape(t, url, "zookeeper_lease_lost_total", `zookeeper_lease_end_cause="expired"`),
		scrape(t, url, "zookeeper_lease_lost_total", `zookeeper_lease_end_cause="session_changed"`))
}
