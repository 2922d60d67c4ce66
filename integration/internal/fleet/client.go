package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
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
	"github.com/zkrecipes/zkrecipes/zktest"
	"go.uber.org/goleak"
)

// Flags holds the values of the flags every client process takes.
type Flags struct {
	Servers        string        // -servers: comma-separated loopback host:port list
	ID             string        // -id: the client's id
	LogPath        string        // -log: the shared log
	SessionTimeout time.Duration // -session-timeout: the ZooKeeper session timeout
	Lifetime       time.Duration // -lifetime: the watchdog's delay (see Start)
}

// RegisterFlags defines the flags of [Flags] on fs, with the same names,
// defaults and usage in every client, and returns where fs.Parse stores
// their values.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Servers, "servers", "", "comma-separated loopback host:port list")
	fs.StringVar(&f.ID, "id", "", "client id")
	fs.StringVar(&f.LogPath, "log", "", "shared log")
	fs.DurationVar(&f.SessionTimeout, "session-timeout", 4*time.Second, "ZooKeeper session timeout")
	fs.DurationVar(&f.Lifetime, "lifetime", 30*time.Minute, "exit with status 3 after this long")
	return f
}

// ServerList returns the -servers list split at its commas.
func (f *Flags) ServerList() []string { return strings.Split(f.Servers, ",") }

// Require returns if every flag named has a non-empty value in the parsed
// fs; otherwise it prints "client: -a, -b and -c are required" (every name
// given) on stderr and exits with status 2. It panics on a name fs does not
// define.
func Require(fs *flag.FlagSet, names ...string) {
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			fmt.Fprintln(os.Stderr, requiredMessage(names))
			os.Exit(2)
		}
	}
}

// RequireLoopback exits the client with status 2 unless every address in
// addrs is a host:port on 127.0.0.0/8: a client of these suites dials
// nothing else. what names the addresses in the message.
func RequireLoopback(what string, addrs ...string) {
	for _, a := range addrs {
		if !Loopback(a) {
			fmt.Fprintf(os.Stderr, "client: %s %q must be on 127.0.0.0/8\n", what, a)
			os.Exit(2)
		}
	}
}

// Loopback reports whether addr is a host:port whose host is an IPv4
// address on 127.0.0.0/8.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() && ip.To4() != nil
}

// requiredMessage is Require's message for names.
func requiredMessage(names []string) string {
	dashed := make([]string, len(names))
	for i, n := range names {
		dashed[i] = "-" + n
	}
	if len(dashed) == 1 {
		return "client: " + dashed[0] + " is required"
	}
	return "client: " + strings.Join(dashed[:len(dashed)-1], ", ") + " and " + dashed[len(dashed)-1] + " are required"
}

// Fail prints "client: err" on stderr and exits with status 1.
func Fail(err error) {
	fmt.Fprintf(os.Stderr, "client: %v\n", err)
	os.Exit(1)
}

// Process is the life of one client process, from [Start] to
// [Process.Finish].
type Process struct {
	// Log is the shared log, open for appending.
	Log *chaos.Log
	// HTTP is the client for the fencing stores: one second per request,
	// on a transport of its own, whose idle connections
	// [Process.Leftover] closes before it looks for goroutines left.
	HTTP     *http.Client
	baseline goleak.Option
	stop     context.CancelFunc
}

// Start begins a client process after flag parsing: it arms a watchdog
// that exits with status 3 (after "client <id>: watchdog after <lifetime>"
// on stderr) once f.Lifetime has passed, returns a context that ends on
// SIGTERM or os.Interrupt, takes the baseline of goroutines that
// [Process.Leftover] ignores, and opens the shared log at f.LogPath,
// exiting through [Fail] when it cannot.
func Start(f *Flags) (context.Context, *Process) {
	time.AfterFunc(f.Lifetime, func() {
		fmt.Fprintf(os.Stderr, "client %s: watchdog after %v\n", f.ID, f.Lifetime)
		os.Exit(3)
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	p := &Process{stop: stop, baseline: goleak.IgnoreCurrent()}
	lg, err := chaos.OpenLog(f.LogPath)
	if err != nil {
		Fail(err)
	}
	p.Log = lg
	p.HTTP = &http.Client{Timeout: time.Second, Transport: &http.Transport{}}
	return ctx, p
}

// Leftover closes the idle connections of p.HTTP and returns goleak's
// report of the goroutines running beyond the baseline Start took, empty
// when there are none. Call it once every Session is closed.
func (p *Process) Leftover() string {
	p.HTTP.CloseIdleConnections()
	if err := goleak.Find(p.baseline); err != nil {
		return err.Error()
	}
	return ""
}

// Finish closes the shared log, prints sum on stdout as one line of JSON,
// the summary the test reads (see StopAll), and stops the signal handling
// of Start.
func (p *Process) Finish(sum any) {
	_ = p.Log.Close()
	_ = json.NewEncoder(os.Stdout).Encode(sum)
	p.stop()
}

// Sleep waits d, or until ctx ends, and then returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// ErrText is err as one field of a log line, its spaces turned into
// underscores; "ok" for nil.
func ErrText(err error) string {
	if err == nil {
		return "ok"
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

// Connect opens a Session to servers with the given session timeout,
// dialling through a zktest.SessionCapture, and keeps the session's id and
// password in sessFile (see SaveSession): once connected, then again on
// every connect and reconnect. Every state change is logged as
// "STATE <actor> <state> 0x<session id>". The returned func unsubscribes,
// closes the Session and returns once the last STATE line is logged; call
// it once, and do not close the Session otherwise. opts are added to the
// Session's options.
func Connect(ctx context.Context, servers []string, timeout time.Duration, lg *chaos.Log, actor, sessFile string, opts ...zr.SessionOption) (*zr.Session, func(), error) {
	var capture zktest.SessionCapture
	s, err := zr.Connect(ctx, servers, append([]zr.SessionOption{zr.WithSessionTimeout(timeout), zr.WithDialer(capture.Dialer())}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	subCtx, cancel := context.WithCancel(context.Background())
	states, _ := s.Subscribe(subCtx)
	SaveSession(&capture, sessFile)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ch := range states {
			lg.Add(chaos.State, actor, ch.State, fmt.Sprintf("0x%x", ch.SessionID))
			if ch.State == zr.StateConnected || ch.State == zr.StateReconnected {
				SaveSession(&capture, sessFile)
			}
		}
	}()
	return s, func() {
		cancel()
		_ = s.Close()
		wg.Wait()
	}, nil
}

// LibraryLog returns a logger for the library's messages (WithLogger), at
// Info and above, appending to the file at path, one text line each,
// stamped with the shared log's clock (mono=<ns>, as chaos.Now) instead
// of the wall clock; nil when path is "". It exits through [Fail] when the
// file cannot be opened.
func LibraryLog(path string) *slog.Logger {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		Fail(err)
	}
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Int64("mono", chaos.Now())
		}
		return a
	}}))
}

// Holding is the log of one lock lease, from [Hold] to [Holding.Release],
// in the lines the overlap check ([chaos.Check]) reads.
type Holding struct {
	lg      *chaos.Log
	actor   string
	l       *zr.Lease
	tok     int64
	watched chan struct{} // closed once the DONE line is logged
}

// Token returns the lease's fencing token.
func (h *Holding) Token() int64 { return h.tok }

// Hold logs "ACQUIRED <actor> <token>" for l and, from then on, watches
// l.Done: as soon as it closes it logs "DONE <actor> <token>
// <lost|released> <err>", stamped when this process saw the close.
func Hold(lg *chaos.Log, actor string, l *zr.Lease) *Holding {
	tok := l.Token()
	h := &Holding{lg: lg, actor: actor, l: l, tok: tok, watched: make(chan struct{})}
	lg.Add(chaos.Acquired, actor, tok)
	go func() {
		defer close(h.watched)
		<-l.Done()
		t := chaos.Now() // as close to the close as this process can see it
		what := "lost"
		if errors.Is(l.Err(), zr.ErrReleased) {
			what = "released"
		}
		lg.AddAt(t, chaos.Done, actor, tok, what, l.Err())
	}()
	return h
}

// Release ends the holding: it logs "STOP <actor> <token> <reason>"; for
// the reason "lost" it first waits until the DONE line is logged, so that
// the loss is logged as seen before Release can change the lease's Err;
// then it releases the lease, within 2 s and whether or not ctx has ended
// (a client that shuts down still releases), logs "RELEASED <actor>
// <token> <ok|error>" and returns Release's error once the DONE line is
// logged.
func (h *Holding) Release(ctx context.Context, reason string) error {
	h.lg.Add(chaos.Stop, h.actor, h.tok, reason)
	if reason == "lost" {
		<-h.watched
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	err := h.l.Release(rctx)
	cancel()
	h.lg.Add(chaos.Released, h.actor, h.tok, ErrText(err))
	<-h.watched
	return err
}

// Fence writes to a fencing store ([chaos.Store]) on behalf of Actor.
type Fence struct {
	Log   *chaos.Log
	HTTP  *http.Client // its timeout bounds each write
	Addr  string       // the store's host:port
	Actor string
}

// Write posts one write under tok, logs "WRITE <actor> <tok> <result>" and
// returns the result: "accepted", "refused" (the store knows a newer
// token) or "error".
func (f Fence) Write(tok int64) string {
	resp, err := f.HTTP.Post(fmt.Sprintf("http://%s/write?client=%s&token=%d", f.Addr, f.Actor, tok), "text/plain", nil)
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
	f.Log.Add(chaos.Write, f.Actor, tok, res)
	return res
}
