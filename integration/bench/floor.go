package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// FloorResult is what raw go-zookeeper requests cost on the server, with
// no lock around them: the floor any ZooKeeper lock stands on.
type FloorResult struct {
	// Per-request p50 of create (EPHEMERAL_SEQUENTIAL), getChildren and
	// delete, and the p50 of the three in sequence, each waiting for the
	// reply before it.
	CreateP50     time.Duration `json:"create_p50_ns"`
	ChildrenP50   time.Duration `json:"children_p50_ns"`
	DeleteP50     time.Duration `json:"delete_p50_ns"`
	SequentialP50 time.Duration `json:"sequential_cycle_p50_ns"`
	// The uncontended cycle of a lock with nothing else in it, p50 and
	// p99: the create, the getChildren sent as soon as the create's frame
	// is written (one session's requests are executed in order, so it
	// lists the new node), then the delete. Two round trips.
	CycleP50    time.Duration `json:"cycle_p50_ns"`
	CycleP99    time.Duration `json:"cycle_p99_ns"`
	ReqPerCycle float64       `json:"requests_per_cycle"`
	// A chain of sessions, each watching the node before it with getData
	// and deleting its own as soon as that one is gone. Link times run
	// from a delete request to the successor's notification; PerHandoff is
	// the whole chain's time divided by its links; Throughput its inverse.
	Links           int           `json:"links"`
	HandoffP50      time.Duration `json:"handoff_p50_ns"`
	HandoffP99      time.Duration `json:"handoff_p99_ns"`
	PerHandoff      time.Duration `json:"per_handoff_ns"`
	Throughput      float64       `json:"throughput_per_s"`
	BytesPerHandoff float64       `json:"response_bytes_per_handoff"`
	// ServerCPUPerHandoff and ClientCPUPerHandoff are the CPU time per
	// link of the chain (a delete and its notification) of the server and
	// of this process, where the chain's sessions live.
	ServerCPUPerHandoff time.Duration `json:"server_cpu_per_handoff_ns"`
	ClientCPUPerHandoff time.Duration `json:"client_cpu_per_handoff_ns"`
	// The same chain with zkrecipes' marked release and no lock logic:
	// each session but the first watches the node before it twice
	// (getData, and getChildren for its deletion) and, once both have
	// fired, releases its own in one multi that sets its data, then
	// deletes it; the holder, which did not wait, deletes its node plainly
	// and the first session behind it watches only that deletion. It is
	// the fastest a handoff can be that tells a holder's release from a
	// cancellation on notifications alone (handoff.go): a drain of
	// zkrecipes' Mutex makes these requests and no other.
	MarkedHandoffP50 time.Duration `json:"marked_handoff_p50_ns"`
	MarkedHandoffP99 time.Duration `json:"marked_handoff_p99_ns"`
	MarkedPerHandoff time.Duration `json:"marked_per_handoff_ns"`
}

// Floor measures cycles raw create/getChildren/delete cycles under path,
// in sequence and then with the listing right behind the create (each
// after warmup unmeasured ones), and a delete→notification chain of links
// sessions.
func Floor(ctx context.Context, env Env, path string, warmup, cycles, links int) (FloorResult, error) {
	var r FloorResult
	created := make(chan struct{}, 1)
	conn, err := connectSignalling(ctx, env.ServerFor(0), created)
	if err != nil {
		return r, err
	}
	defer conn.Close()
	if err := ensurePath(conn, path); err != nil {
		return r, err
	}
	acl := zk.WorldACL(zk.PermAll)
	var cr, ch, de, seq, cy []time.Duration
	for i := range warmup + cycles {
		t0 := time.Now()
		p, err := conn.Create(path+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return r, err
		}
		t1 := time.Now()
		if _, _, err := conn.Children(path); err != nil {
			return r, err
		}
		t2 := time.Now()
		if err := conn.Delete(p, -1); err != nil {
			return r, err
		}
		t3 := time.Now()
		if i >= warmup {
			cr, ch, de, seq = append(cr, t1.Sub(t0)), append(ch, t2.Sub(t1)), append(de, t3.Sub(t2)), append(seq, t3.Sub(t0))
		}
	}
	// The pipelined cycles' requests, as the server counts them (the meter's
	// own mntr commands and the session's pings are a few more).
	before, err := env.Meter.Read(ctx)
	if err != nil {
		return r, err
	}
	for i := range warmup + cycles {
		t0 := time.Now()
		drain(created)
		type res struct {
			p   string
			err error
		}
		rc := make(chan res, 1)
		go func() {
			p, err := conn.Create(path+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
			rc <- res{p, err}
		}()
		var c res
		replied := false
		select {
		case <-created:
		case c = <-rc: // the reply came first (or the create failed before it was written)
			if c.err != nil {
				return r, c.err
			}
			replied = true
		}
		kids, _, err := conn.Children(path)
		if !replied {
			c = <-rc
		}
		if c.err != nil {
			return r, c.err
		}
		if err != nil {
			return r, err
		}
		if len(kids) != 1 {
			return r, fmt.Errorf("bench: floor listing %v: want the one new node", kids)
		}
		if err := conn.Delete(c.p, -1); err != nil {
			return r, err
		}
		if i >= warmup {
			cy = append(cy, time.Since(t0))
		}
	}
	if len(cy) == 0 || len(seq) == 0 {
		return r, errors.New("bench: the floor measured no cycle")
	}
	r.CreateP50, r.ChildrenP50, r.DeleteP50 = Percentile(cr, 0.5), Percentile(ch, 0.5), Percentile(de, 0.5)
	r.SequentialP50 = Percentile(seq, 0.5)
	r.CycleP50, r.CycleP99 = Percentile(cy, 0.5), Percentile(cy, 0.99)
	d, err := env.Meter.Delta(ctx, before)
	if err != nil {
		return r, err
	}
	r.ReqPerCycle = float64(d.PacketsReceived) / float64(warmup+cycles)
	plain, err := chain(ctx, env, path, links, false)
	if err != nil {
		return r, err
	}
	r.Links = links
	r.HandoffP50, r.HandoffP99, r.PerHandoff = plain.p50, plain.p99, plain.per
	r.Throughput = float64(time.Second) / float64(r.PerHandoff)
	r.BytesPerHandoff, r.ServerCPUPerHandoff, r.ClientCPUPerHandoff = plain.bytes, plain.serverCPU, plain.clientCPU
	marked, err := chain(ctx, env, path, links, true)
	if err != nil {
		return r, err
	}
	r.MarkedHandoffP50, r.MarkedHandoffP99, r.MarkedPerHandoff = marked.p50, marked.p99, marked.per
	return r, nil
}

// chainResult is what one chain measured: link p50 and p99, the whole
// chain's time per link, and the server's response bytes and the server's
// and this process's CPU per link.
type chainResult struct {
	p50, p99, per        time.Duration
	bytes, requests      float64
	serverCPU, clientCPU time.Duration
}

// chain runs the delete→notification chain, or with marked the marked
// chain (see MarkedPerHandoff).
func chain(ctx context.Context, env Env, path string, links int, marked bool) (chainResult, error) {
	var r chainResult
	conns := make([]*zk.Conn, links+1)
	errs := make([]error, links+1)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			conns[i], errs[i] = ConnectRaw(ctx, env.ServerFor(i))
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		// The links still waiting (a return on an error) see their watch
		// end with the connection.
		wg.Wait()
	}()
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	acl := zk.WorldACL(zk.PermAll)
	nodes := make([]string, links+1)
	for i, c := range conns {
		p, err := c.Create(path+"/chain-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return r, err
		}
		nodes[i] = p
	}
	// In the marked chain, as in a drain of zkrecipes' Mutex, every link
	// that waited releases in one multi (setData, delete); the holder,
	// link 0, which did not wait, deletes plainly (handoff.go).
	markedRelease := func(i int) bool { return marked && i > 0 }
	release := func(i int) error {
		if !markedRelease(i) {
			return conns[i].Delete(nodes[i], -1)
		}
		_, err := conns[i].Multi(&zk.SetDataRequest{Path: nodes[i], Data: []byte{}, Version: -1},
			&zk.DeleteRequest{Path: nodes[i], Version: -1})
		return err
	}
	// Each link's watches on the node before it, in the order they fire:
	// a getData watch, and behind a marked release also a getChildren
	// watch, which a data change does not consume and the deletion fires.
	// wantType[i] are the events that hand the lock over to link i: the
	// deletion, or the marked release's data change and then its deletion.
	wantType := make([][]zk.EventType, links+1)
	watches := make([][]<-chan zk.Event, links+1)
	for i := 1; i <= links; i++ {
		_, _, w, err := conns[i].GetW(nodes[i-1])
		if err != nil {
			return r, err
		}
		watches[i] = append(watches[i], w)
		wantType[i] = []zk.EventType{zk.EventNodeDeleted}
		if markedRelease(i - 1) {
			if _, _, w, err = conns[i].ChildrenW(nodes[i-1]); err != nil {
				return r, err
			}
			watches[i] = append(watches[i], w)
			wantType[i] = []zk.EventType{zk.EventNodeDataChanged, zk.EventNodeDeleted}
		}
	}
	delStart := make([]time.Time, links+1)
	notified := make([]time.Time, links+1)
	errs = make([]error, links+1)
	for i := 1; i <= links; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k, w := range watches[i] {
				select {
				case ev := <-w:
					if ev.Type != wantType[i][k] {
						errs[i] = errors.New("bench: chain: unexpected event " + ev.Type.String())
						return
					}
				case <-ctx.Done():
					errs[i] = ctx.Err()
					return
				}
			}
			notified[i] = time.Now()
			delStart[i] = time.Now()
			errs[i] = release(i)
		}()
	}
	before, err := env.Meter.Read(ctx)
	if err != nil {
		return r, err
	}
	cpu0, cpuErr := ProcCPU(os.Getpid())
	delStart[0] = time.Now()
	if err := release(0); err != nil {
		return r, err
	}
	wg.Wait()
	cpu1, err := ProcCPU(os.Getpid())
	cpuErr = errors.Join(cpuErr, err)
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	delta, err := env.Meter.Delta(ctx, before)
	if err != nil {
		return r, err
	}
	link := make([]time.Duration, links)
	for i := 1; i <= links; i++ {
		link[i-1] = notified[i].Sub(delStart[i-1])
	}
	total := notified[links].Sub(delStart[0])
	r.p50, r.p99 = Percentile(link, 0.5), Percentile(link, 0.99)
	r.per = total / time.Duration(links)
	r.bytes = float64(delta.ResponseBytes) / float64(links)
	r.requests = float64(delta.PacketsReceived) / float64(links)
	r.serverCPU = PerOp(delta.ServerCPU, links)
	r.clientCPU = PerOp(clientCPU(cpu1-cpu0, cpuErr), links)
	return r, nil
}

// MarkedChain runs the marked chain alone (FloorResult.MarkedPerHandoff)
// with links handoffs under path: the drain's floor at a queue of links
// waiters, a holder and links sessions behind it, each releasing as
// zkrecipes' Mutex does in a drain. It returns what it measured as a
// drain of links waiters: from the holder's release to the last link's
// last notification.
func MarkedChain(ctx context.Context, env Env, path string, links int) (DrainResult, error) {
	if links < 1 {
		return DrainResult{}, fmt.Errorf("bench: a marked chain of %d links", links)
	}
	conn, err := ConnectRaw(ctx, env.ServerFor(0))
	if err != nil {
		return DrainResult{}, err
	}
	err = ensurePath(conn, path)
	conn.Close()
	if err != nil {
		return DrainResult{}, err
	}
	c, err := chain(ctx, env, path, links, true)
	if err != nil {
		return DrainResult{}, err
	}
	return DrainResult{
		Waiters: links, Total: c.per * time.Duration(links), PerHandoff: c.per,
		BytesPerHandoff: c.bytes, ReqPerHandoff: c.requests,
	}, nil
}

// ensurePath creates path and its parents as persistent nodes if missing.
func ensurePath(conn *zk.Conn, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		if _, err := conn.Create(path[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			return err
		}
	}
	return nil
}

// connectSignalling is ConnectRaw on a connection that tells, through
// created, when a create request's frame has been written.
func connectSignalling(ctx context.Context, servers []string, created chan struct{}) (*zk.Conn, error) {
	return connectRaw(ctx, servers, func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := LoopbackDialer(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &createSignal{Conn: c, created: created}, nil
	})
}

// createSignal tells, through created, that a create request's frame has
// been written (go-zookeeper writes each request in one Write: length,
// xid, opcode, ...).
type createSignal struct {
	net.Conn
	created chan struct{}
}

func (c *createSignal) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil && len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == 1 { // opCreate
		select {
		case c.created <- struct{}{}:
		default:
		}
	}
	return n, err
}

func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}
