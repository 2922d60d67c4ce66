// Command client is one contender of the chaos suite: it takes a zkrecipes
// Mutex again and again, writes to the fencing store under each lease's
// token, and appends every event (ACQUIRED, DONE, STOP, RELEASED, WRITE,
// STATE, ERROR) to the shared log with a CLOCK_MONOTONIC stamp. It keeps
// its current session id and password in -session-file, so that the test
// can expire the session from the server side.
//
// On SIGTERM it releases what it holds, closes the Session, checks that no
// goroutine is left, prints a JSON summary line on stdout and exits 0. It
// dials 127.0.0.0/8 only.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/integration/chaos"
	"github.com/zkrecipes/zkrecipes/integration/zktest"
	"go.uber.org/goleak"
)

type summary struct {
	ID           string `json:"id"`
	Acquisitions int    `json:"acquisitions"`
	Losses       int    `json:"losses"`
	Errors       int    `json:"errors"`
	Leaked       string `json:"leaked,omitempty"`
}

func main() {
	var (
		servers  = flag.String("servers", "", "comma-separated loopback host:port list")
		path     = flag.String("path", "/chaos/lock", "lock path")
		id       = flag.String("id", "", "client id")
		logPath  = flag.String("log", "", "shared log")
		store    = flag.String("store", "", "fencing store host:port")
		timeout  = flag.Duration("session-timeout", 4*time.Second, "ZooKeeper session timeout")
		sessFile = flag.String("session-file", "", "where to keep the current session id and password")
		writes   = flag.Int("writes", 3, "writes per ordinary lease")
		hold     = flag.Duration("hold", 20*time.Millisecond, "pause after each write")
		longP    = flag.Float64("long", 0.25, "share of leases held for -long-hold instead of -writes writes")
		longHold = flag.Duration("long-hold", time.Second, "how long a long lease is held")
		lifetime = flag.Duration("lifetime", 30*time.Minute, "exit with status 3 after this long")
		leaseT   = flag.Duration("lease-time", 0, "lock with WithLeaseTime(this); a long lease then plays a holder that never looks at Done and writes on until fenced (0: no lease time)")
	)
	flag.Parse()
	if *servers == "" || *id == "" || *logPath == "" || *store == "" || *sessFile == "" {
		fmt.Fprintln(os.Stderr, "client: -servers, -id, -log, -store and -session-file are required")
		os.Exit(2)
	}
	if !loopback(*store) {
		fmt.Fprintln(os.Stderr, "client: the store must be on 127.0.0.0/8")
		os.Exit(2)
	}
	time.AfterFunc(*lifetime, func() {
		fmt.Fprintf(os.Stderr, "client %s: watchdog after %v\n", *id, *lifetime)
		os.Exit(3)
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	baseline := goleak.IgnoreCurrent()

	lg, err := chaos.OpenLog(*logPath)
	if err != nil {
		fail(err)
	}
	c := &client{id: *id, log: lg, store: *store, writes: *writes, hold: *hold, longP: *longP, longHold: *longHold, sessFile: *sessFile, leaseTime: *leaseT,
		http: &http.Client{Timeout: time.Second, Transport: &http.Transport{}}}
	sum, err := c.run(ctx, strings.Split(*servers, ","), *path, *timeout)
	if err != nil {
		fail(err)
	}
	c.http.CloseIdleConnections()
	if err := goleak.Find(baseline); err != nil {
		sum.Leaked = err.Error()
	}
	_ = lg.Close()
	_ = json.NewEncoder(os.Stdout).Encode(sum)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "client: %v\n", err)
	os.Exit(1)
}

type client struct {
	id       string
	log      *chaos.Log
	store    string
	writes   int
	hold     time.Duration
	longP    float64
	longHold time.Duration
	sessFile string
	// leaseTime, when set, is the lock's WithLeaseTime, and long leases
	// ignore Done (a paused holder): only the fence stops their writes.
	leaseTime time.Duration
	http      *http.Client
	capture   zktest.SessionCapture
}

func (c *client) run(ctx context.Context, servers []string, path string, timeout time.Duration) (summary, error) {
	sum := summary{ID: c.id}
	s, err := zr.Connect(ctx, servers, zr.WithSessionTimeout(timeout), zr.WithDialer(c.capture.Dialer()))
	if err != nil {
		return sum, err
	}
	var wg sync.WaitGroup
	states, cancel := s.Subscribe()
	c.saveSession()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ch := range states {
			c.log.AddAt(chaos.Now(), chaos.State, c.id, ch.State, fmt.Sprintf("0x%x", ch.SessionID))
			if ch.State == zr.StateConnected || ch.State == zr.StateReconnected {
				c.saveSession()
			}
		}
	}()
	defer func() {
		cancel()
		_ = s.Close()
		wg.Wait()
	}()

	opts := []zr.LockOption{zr.WithNodeData([]byte(c.id))}
	if c.leaseTime > 0 {
		opts = append(opts, zr.WithLeaseTime(c.leaseTime))
	}
	m := zr.NewMutex(s, path, opts...)
	for ctx.Err() == nil {
		l, err := m.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			sum.Errors++
			c.log.Add(chaos.Failed, c.id, err)
			if sleep(ctx, 100*time.Millisecond) != nil {
				break
			}
			continue
		}
		sum.Acquisitions++
		if c.holdLease(ctx, l) {
			sum.Losses++
		}
	}
	return sum, nil
}

// holdLease acts as the holder of l until its writes are done (or, for a
// long lease, its time is up), the lease is lost, the store refuses the
// token, or ctx ends; then releases it. It reports whether the lease was
// lost.
func (c *client) holdLease(ctx context.Context, l *zr.Lease) bool {
	tok := l.Token()
	writes, until := c.writes, time.Time{}
	blind := false // writes on after Done closes, until fenced
	if rand.Float64() < c.longP {
		writes, until = math.MaxInt, time.Now().Add(c.longHold)
		blind = c.leaseTime > 0
	}
	done := l.Done()
	if blind {
		done = nil
	}
	c.log.Add(chaos.Acquired, c.id, tok)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		<-l.Done()
		t := chaos.Now() // as close to the close as this process can see it
		what := "lost"
		if errors.Is(l.Err(), zr.ErrReleased) {
			what = "released"
		}
		c.log.AddAt(t, chaos.Done, c.id, tok, what, l.Err())
	}()
	reason := "release"
	for i := 0; i < writes && reason == "release" && (until.IsZero() || time.Now().Before(until)); i++ {
		if (l.Err() != nil && !blind) || ctx.Err() != nil {
			reason = "lost"
			if ctx.Err() != nil && l.Err() == nil {
				reason = "shutdown"
			}
			break
		}
		switch res := c.write(tok); res {
		case "refused":
			reason = "fenced"
		case "accepted", "error":
		}
		select {
		case <-done:
		case <-ctx.Done():
		case <-time.After(c.hold):
		}
	}
	if reason == "release" && l.Err() != nil {
		reason = "lost"
	}
	c.log.Add(chaos.Stop, c.id, tok, reason)
	if reason == "lost" {
		<-watched // the loss is logged as seen before Release can change Err
	}
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := l.Release(rctx)
	cancel()
	result := "ok"
	if err != nil {
		result = strings.ReplaceAll(err.Error(), " ", "_")
	}
	c.log.Add(chaos.Released, c.id, tok, result)
	<-watched
	return errors.Is(err, zr.ErrLockLost)
}

// write sends one write under tok to the store.
func (c *client) write(tok int64) string {
	resp, err := c.http.Post(fmt.Sprintf("http://%s/write?client=%s&token=%d", c.store, c.id, tok), "text/plain", nil)
	res := "error"
	if err == nil {
		switch resp.StatusCode {
		case http.StatusNoContent:
			res = "accepted"
		case http.StatusConflict:
			res = "refused"
		}
		resp.Body.Close()
	}
	c.log.Add(chaos.Write, c.id, tok, res)
	return res
}

// saveSession writes "<id hex> <password hex>" of the captured session.
func (c *client) saveSession() {
	id, pw, ok := c.capture.Session()
	if !ok {
		return
	}
	tmp := c.sessFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%x %s\n", id, hex.EncodeToString(pw))), 0o644); err == nil {
		_ = os.Rename(tmp, c.sessFile)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() && ip.To4() != nil
}
