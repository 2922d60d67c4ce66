// Command gozk is the Go peer of the zkrecipes interoperability tests.
//
// It contends for go-zookeeper's own zk.NewLock (nodes named
// _c_<32 hex>-lock-<seq>), or with --impl zkrecipes for a zkrecipes Mutex (nodes
// named _c_<uuid>-lock-<seq>, token = czxid) or, in the latch and selector
// modes, a zkrecipes Election in Curator's LeaderLatch or LeaderSelector
// layout (LEAD/UNLEAD lines), appends its acquisitions to a shared
// log (one O_APPEND write per line) and prints one JSON summary line on stdout:
//
//	gozk mutex --servers 127.0.0.1:2181 --path /p --id g1 --duration 4s --hold-ms 1 --log /tmp/log
//	gozk latch --impl zkrecipes --servers 127.0.0.1:2181 --path /e --id z1 --hold-ms 50 --log /tmp/log
//	gozk bench-uncontended --servers 127.0.0.1:2181 --path /b --count 1000
//	gozk bench-contended --servers 127.0.0.1:2181 --path /b --id g1 --duration 5s --log /tmp/log
//
// It refuses servers outside 127.0.0.0/8. Exit status: 0 on a clean run, 1 on an
// error, 2 on a usage error, 3 when the watchdog stopped it after its duration.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	exitError    = 1
	exitUsage    = 2
	exitWatchdog = 3
)

type options struct {
	mode           string
	servers        string
	path           string
	id             string
	duration       time.Duration
	count          int
	holdMs         int
	logPath        string
	sessionTimeout time.Duration
	impl           string // "gozk" or "zkrecipes"
}

type peer struct {
	opt options
	// deadline is when the work ends: opt.duration after the client
	// connected (a busy machine may take seconds to start the peer and
	// connect). Until then it bounds the connecting.
	deadline  time.Time
	watchdog  *time.Timer // fires grace after deadline
	grace     time.Duration
	conn      *zk.Conn
	log       *os.File
	acquired  int
	latencies []time.Duration
	extra     map[string]any
}

func main() {
	opt, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "gozk: %v\n", err)
		os.Exit(exitUsage)
	}
	// Long enough that only a stuck peer meets it: at load 28 a peer took more than the
	// 5 s this was before to finish its last cycle and close its client.
	grace := max(30*time.Second, 2*time.Duration(opt.holdMs)*time.Millisecond+opt.sessionTimeout/2)
	p := &peer{opt: opt, deadline: time.Now().Add(opt.duration), grace: grace, extra: map[string]any{}}
	p.watchdog = time.AfterFunc(opt.duration+grace, func() {
		fmt.Fprintf(os.Stderr, "gozk: watchdog: %s %s still running %v after its duration\n", opt.mode, opt.id, grace)
		os.Exit(exitWatchdog)
	})
	if err := p.run(); err != nil {
		fmt.Fprintf(os.Stderr, "gozk: error: %s %s: %v\n", opt.mode, opt.id, err)
		os.Exit(exitError)
	}
	if err := p.printSummary(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gozk: error: %v\n", err)
		os.Exit(exitError)
	}
}

func parseArgs(args []string) (options, error) {
	var o options
	if len(args) < 1 || strings.HasPrefix(args[0], "-") {
		return o, errors.New("usage: gozk <mutex|latch|selector|bench-uncontended|bench-contended> --servers H:P --path /P [flags]")
	}
	o.mode = args[0]
	switch o.mode {
	case "mutex", "latch", "selector", "bench-uncontended", "bench-contended":
	default:
		return o, fmt.Errorf("unknown subcommand %q", o.mode)
	}
	fs := flag.NewFlagSet("gozk "+o.mode, flag.ContinueOnError)
	fs.StringVar(&o.servers, "servers", "", "comma-separated host:port list (loopback only)")
	fs.StringVar(&o.path, "path", "", "the lock path")
	fs.StringVar(&o.id, "id", fmt.Sprintf("gozk-%d", os.Getpid()), "participant id")
	duration := fs.String("duration", "", "run time such as 4s or 500ms (default 4s; 60s cap for bench-uncontended)")
	fs.IntVar(&o.count, "count", 1000, "cycles for bench-uncontended")
	fs.IntVar(&o.holdMs, "hold-ms", 1, "hold time per acquisition in milliseconds")
	fs.StringVar(&o.logPath, "log", "", "shared log file (appended)")
	sessionMs := fs.Int("session-timeout-ms", 10000, "session timeout in milliseconds")
	fs.StringVar(&o.impl, "impl", "gozk", "lock implementation: gozk (zk.NewLock) or zkrecipes (zkrecipes.Mutex)")
	if err := fs.Parse(args[1:]); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.impl != "gozk" && o.impl != "zkrecipes" {
		return o, fmt.Errorf("unknown --impl %q", o.impl)
	}
	if (o.mode == "latch" || o.mode == "selector") && o.impl != "zkrecipes" {
		return o, fmt.Errorf("%s needs --impl zkrecipes (go-zookeeper has no leader election)", o.mode)
	}
	if o.servers == "" || o.path == "" {
		return o, errors.New("--servers and --path are required")
	}
	if *duration == "" {
		*duration = "4s"
		if o.mode == "bench-uncontended" {
			*duration = "60s"
		}
	}
	d, err := parseDuration(*duration)
	if err != nil {
		return o, err
	}
	o.duration = d
	o.sessionTimeout = time.Duration(*sessionMs) * time.Millisecond
	return o, nil
}

// parseDuration accepts the forms the Java and Python peers accept: "500ms",
// "4s", "1.5s", "2m" or a bare number of seconds.
func parseDuration(s string) (time.Duration, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(v * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return d, nil
}

// loopbackDialer refuses every address outside 127.0.0.0/8.
func loopbackDialer(network, address string, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() || ip.To4() == nil {
		return nil, fmt.Errorf("refusing to dial %s: only 127.0.0.0/8 is allowed", address)
	}
	return net.DialTimeout(network, address, timeout)
}

func (p *peer) remaining() time.Duration { return time.Until(p.deadline) }

// connected starts the duration, and moves the watchdog with it, once the
// client has connected.
func (p *peer) connected() {
	p.deadline = time.Now().Add(p.opt.duration)
	p.watchdog.Reset(p.opt.duration + p.grace)
}

func (p *peer) run() error {
	if p.opt.logPath != "" {
		f, err := os.OpenFile(p.opt.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		p.log = f
	}
	if p.opt.impl == "zkrecipes" {
		return p.runZkrecipes()
	}
	if err := p.connect(); err != nil {
		return err
	}
	defer p.conn.Close()
	if p.opt.mode == "bench-uncontended" {
		return p.benchUncontended()
	}
	return p.loop()
}

func (p *peer) connect() error {
	servers := strings.Split(p.opt.servers, ",")
	conn, events, err := zk.Connect(servers, p.opt.sessionTimeout,
		zk.WithDialer(loopbackDialer), zk.WithLogger(quietLogger{}))
	if err != nil {
		return err
	}
	connected := make(chan struct{})
	go func() { // drain every event: go-zookeeper drops events once its small buffer is full
		once := false
		for ev := range events {
			if ev.State == zk.StateHasSession && !once {
				once = true
				close(connected)
			}
		}
	}()
	timer := time.NewTimer(max(p.remaining(), time.Millisecond))
	defer timer.Stop()
	select {
	case <-connected:
		p.conn = conn
		p.connected()
		return nil
	case <-timer.C:
		go conn.Close() // Close waits up to a second for a server that is not there
		return fmt.Errorf("could not connect to %s within %v", p.opt.servers, p.opt.duration)
	}
}

// lockUntilDeadline runs l.Lock, which has no timeout of its own; at the
// deadline it closes the connection, which fails the pending Lock (and lets the
// server drop the lock node with the session). It reports whether the lock is held.
func (p *peer) lockUntilDeadline(l *zk.Lock) (bool, error) {
	done := make(chan error, 1)
	go func() { done <- l.Lock() }()
	timer := time.NewTimer(max(p.remaining(), 0))
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return false, err
		}
		return true, nil
	case <-timer.C:
		p.conn.Close()
		<-done
		return false, nil
	}
}

func (p *peer) loop() error {
	for p.remaining() > 0 {
		l := zk.NewLock(p.conn, p.opt.path, zk.WorldACL(zk.PermAll))
		t0 := time.Now()
		held, err := p.lockUntilDeadline(l)
		if err != nil {
			return err
		}
		if !held {
			break
		}
		p.latencies = append(p.latencies, time.Since(t0))
		p.acquired++
		tok := "-"
		if p.opt.mode == "mutex" && p.log != nil {
			tok = p.ownToken()
		}
		if err := p.writeLog(fmt.Sprintf("ENTER %s %s", p.opt.id, tok)); err != nil {
			return err
		}
		time.Sleep(time.Duration(p.opt.holdMs) * time.Millisecond)
		if err := p.writeLog("EXIT " + p.opt.id); err != nil {
			return err
		}
		if err := l.Unlock(); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
	}
	return nil
}

// ownToken finds the sequence of the held lock node: zk.Lock keeps it private,
// but while the lock is held its sequence is, by zk.Lock's own rule, the lowest
// under the path. Costs one extra round trip, so bench modes skip it.
func (p *peer) ownToken() string {
	children, _, err := p.conn.Children(p.opt.path)
	if err != nil {
		return "-"
	}
	best := int64(math.MaxInt64)
	for _, c := range children {
		i := max(strings.LastIndex(c, "lock-")+len("lock-"), strings.LastIndex(c, "__")+len("__"))
		if v, err := strconv.ParseInt(c[i:], 10, 64); err == nil && v < best {
			best = v
		}
	}
	if best == math.MaxInt64 {
		return "-"
	}
	return fmt.Sprintf("%010d", best)
}

func (p *peer) benchUncontended() error {
	l := zk.NewLock(p.conn, p.opt.path, zk.WorldACL(zk.PermAll))
	for i := range p.opt.count {
		if p.remaining() <= 0 {
			return fmt.Errorf("duration ended after %d of %d cycles", i, p.opt.count)
		}
		t0 := time.Now()
		held, err := p.lockUntilDeadline(l)
		if err != nil {
			return err
		}
		if !held {
			return fmt.Errorf("uncontended acquire did not finish within the duration (is another contender on %s?)", p.opt.path)
		}
		if err := l.Unlock(); err != nil {
			return err
		}
		p.latencies = append(p.latencies, time.Since(t0))
		p.acquired++
	}
	p.extra["cycles"] = p.opt.count
	return nil
}

func (p *peer) writeLog(line string) error {
	if p.log == nil {
		return nil
	}
	// One write(2) per line on an O_APPEND file keeps lines of concurrent processes whole.
	_, err := p.log.WriteString(fmt.Sprintf("%s %d\n", line, time.Now().UnixNano()))
	return err
}

func (p *peer) printSummary(w io.Writer) error {
	lat := slices.Clone(p.latencies)
	slices.Sort(lat)
	out := map[string]any{
		"peer":         p.opt.impl,
		"mode":         p.opt.mode,
		"id":           p.opt.id,
		"acquisitions": p.acquired,
		"errors":       0,
		"samples":      len(lat),
		"p50_us":       percentileMicros(lat, 0.50),
		"p99_us":       percentileMicros(lat, 0.99),
		"max_us":       percentileMicros(lat, 1),
	}
	for k, v := range p.extra {
		out[k] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func percentileMicros(sorted []time.Duration, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = min(max(i, 0), len(sorted)-1)
	return sorted[i].Microseconds()
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
