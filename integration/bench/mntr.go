package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// Counters are the server counters the benchmarks read from "mntr".
type Counters struct {
	// PacketsReceived is zk_packets_received: every packet read from a
	// client, requests and pings alike, and each mntr command itself.
	PacketsReceived int64
	// PacketsSent is zk_packets_sent: every packet sent to a client,
	// replies (to requests and pings) and watch notifications alike. Less
	// PacketsReceived, it counts the notifications.
	PacketsSent int64
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
		PacketsSent:     c.PacketsSent - before.PacketsSent,
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
		{"zk_packets_sent", &c.PacketsSent},
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

// Meter reads the servers' counters around a measured phase, summed over
// the servers (one for a standalone server, each member of an ensemble),
// and takes off what reading them costs: the packets, and the server CPU
// time, two back-to-back reads differ by while nothing else runs.
type Meter struct {
	servers  []meteredServer
	overhead int64         // packets received per reading
	sentCost int64         // packets sent per reading
	cpuCost  time.Duration // the server CPU one reading costs (mntr on every server)
}

type meteredServer struct {
	addr string
	// pid is the server process, found by its listening socket; 0 when it
	// could not be found (no /proc, say), and then the Meter measures no
	// CPU at all.
	pid int
}

// NewMeter calibrates a Meter on the servers at addrs. Call it while no
// client sends anything.
func NewMeter(ctx context.Context, addrs ...string) (*Meter, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("bench: a Meter needs a server")
	}
	m := &Meter{}
	for _, a := range addrs {
		pid, _ := ListenerPID(a)
		m.servers = append(m.servers, meteredServer{a, pid})
	}
	a, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	b, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	m.overhead = b.PacketsReceived - a.PacketsReceived
	m.sentCost = b.PacketsSent - a.PacketsSent
	if m.measuresCPU() {
		// The CPU a reading costs the servers (about 2 ms for mntr on a
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

// MeasuresCPU reports whether the Meter reads the servers' CPU time
// (Counters.ServerCPU): it found every server's process.
func (m *Meter) MeasuresCPU() bool { return m.measuresCPU() }

func (m *Meter) measuresCPU() bool {
	for _, s := range m.servers {
		if s.pid == 0 {
			return false
		}
	}
	return true
}

// Read returns the servers' counters now, summed.
func (m *Meter) Read(ctx context.Context) (Counters, error) {
	var sum Counters
	for _, s := range m.servers {
		c, err := ReadCounters(ctx, s.addr)
		if err == nil && m.measuresCPU() {
			c.ServerCPU, err = ProcCPU(s.pid)
		}
		if err != nil {
			return Counters{}, err
		}
		sum.PacketsReceived += c.PacketsReceived
		sum.PacketsSent += c.PacketsSent
		sum.ResponseBytes += c.ResponseBytes
		sum.BytesReceived += c.BytesReceived
		sum.Watches += c.Watches
		sum.ServerCPU += c.ServerCPU
	}
	return sum, nil
}

// Delta returns what the servers counted since before, less the cost of
// the reading itself.
func (m *Meter) Delta(ctx context.Context, before Counters) (Counters, error) {
	now, err := m.Read(ctx)
	if err != nil {
		return Counters{}, err
	}
	d := now.Sub(before)
	d.PacketsReceived -= m.overhead
	d.PacketsSent -= m.sentCost
	d.ServerCPU = max(d.ServerCPU-m.cpuCost, 0)
	return d, nil
}
