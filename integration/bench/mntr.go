package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/zktest"
)

// Counters are the server counters the benchmarks read from "mntr".
type Counters struct {
	// PacketsReceived is zk_packets_received: every packet read from a
	// client, requests and pings alike, and each mntr command itself.
	PacketsReceived int64
	// ResponseBytes is zk_response_bytes: the bytes of the replies to
	// requests; watch notifications and pings are not counted.
	ResponseBytes int64
	// BytesReceived is zk_bytes_received_count: the bytes read from clients.
	BytesReceived int64
	// Watches is zk_watch_count, the watches set now (a gauge).
	Watches int64
	// ServerCPU is the CPU time the server process has used, when the
	// Meter found that process (ServerPID); zero otherwise.
	ServerCPU time.Duration
}

// Sub returns the growth of the counters from before to c; Watches is c's.
func (c Counters) Sub(before Counters) Counters {
	return Counters{
		PacketsReceived: c.PacketsReceived - before.PacketsReceived,
		ResponseBytes:   c.ResponseBytes - before.ResponseBytes,
		BytesReceived:   c.BytesReceived - before.BytesReceived,
		Watches:         c.Watches,
		ServerCPU:       c.ServerCPU - before.ServerCPU,
	}
}

// ReadCounters reads the counters of the server at addr.
func ReadCounters(ctx context.Context, addr string) (Counters, error) {
	m, err := zktest.Mntr(ctx, addr)
	if err != nil {
		return Counters{}, err
	}
	return parseCounters(m)
}

func parseCounters(m map[string]string) (Counters, error) {
	var c Counters
	for _, f := range []struct {
		key string
		dst *int64
	}{
		{"zk_packets_received", &c.PacketsReceived},
		{"zk_response_bytes", &c.ResponseBytes},
		{"zk_bytes_received_count", &c.BytesReceived},
		{"zk_watch_count", &c.Watches},
	} {
		v, err := strconv.ParseInt(m[f.key], 10, 64)
		if err != nil {
			return Counters{}, fmt.Errorf("bench: mntr %s = %q: %v", f.key, m[f.key], err)
		}
		*f.dst = v
	}
	return c, nil
}

// Meter reads a server's counters around a measured phase and takes off
// what reading them costs: the packets, and the server CPU time, two
// back-to-back reads differ by while nothing else runs.
type Meter struct {
	Addr string
	// ServerPID is the server process, found by its listening socket; 0
	// when it could not be found (a server in another network namespace,
	// or no /proc), and then CPU is not measured.
	ServerPID int
	overhead  int64
	cpuCost   time.Duration // the server CPU one reading costs (mntr)
}

// NewMeter calibrates a Meter on the server at addr. Call it while no
// client sends anything.
func NewMeter(ctx context.Context, addr string) (*Meter, error) {
	m := &Meter{Addr: addr}
	m.ServerPID, _ = ListenerPID(addr)
	a, err := ReadCounters(ctx, addr)
	if err != nil {
		return nil, err
	}
	b, err := ReadCounters(ctx, addr)
	if err != nil {
		return nil, err
	}
	m.overhead = b.PacketsReceived - a.PacketsReceived
	if m.ServerPID > 0 {
		// The CPU a reading costs the server (about 2 ms for mntr on a
		// 2-core machine): the median of a few back-to-back pairs.
		costs := make([]float64, 5)
		for i := range costs {
			if a, err = m.Read(ctx); err == nil {
				b, err = m.Read(ctx)
			}
			if err != nil {
				return nil, err
			}
			costs[i] = float64(b.ServerCPU - a.ServerCPU)
		}
		m.cpuCost = time.Duration(Median(costs))
	}
	return m, nil
}

// Read returns the server's counters now.
func (m *Meter) Read(ctx context.Context) (Counters, error) {
	c, err := ReadCounters(ctx, m.Addr)
	if err == nil && m.ServerPID > 0 {
		c.ServerCPU, err = ProcCPU(m.ServerPID)
	}
	return c, err
}

// Delta returns what the server counted since before, less the cost of
// the reading itself.
func (m *Meter) Delta(ctx context.Context, before Counters) (Counters, error) {
	now, err := m.Read(ctx)
	if err != nil {
		return Counters{}, err
	}
	d := now.Sub(before)
	d.PacketsReceived -= m.overhead
	d.ServerCPU = max(d.ServerCPU-m.cpuCost, 0)
	return d, nil
}
