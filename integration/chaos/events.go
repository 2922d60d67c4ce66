package chaos

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Now returns CLOCK_MONOTONIC in nanoseconds: the same clock in every
// process of the machine, never stepped by NTP.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("chaos: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// The event kinds of the shared log. A line is
//
//	<mono-ns> <KIND> <actor> [fields...]
//
// written with one write(2) on a file opened with O_APPEND.
const (
	// Acquired: "<t> ACQUIRED <client> <token>": Acquire returned a lease.
	Acquired = "ACQUIRED"
	// Done: "<t> DONE <client> <token> <lost|released> <err...>": the
	// lease's Done channel closed, observed at t (the close was at or
	// before t).
	Done = "DONE"
	// Stop: "<t> STOP <client> <token> <reason>": the client stopped
	// acting as the holder (before Release, or on seeing the loss, or after
	// the store refused its token).
	Stop = "STOP"
	// Released: "<t> RELEASED <client> <token> <result>".
	Released = "RELEASED"
	// Write: "<t> WRITE <client> <token> <accepted|refused|error>": the
	// client's write to the fencing store and the answer.
	Write = "WRITE"
	// Failed: "<t> ERROR <client> <err...>": an acquisition failed.
	Failed = "ERROR"
	// State: "<t> STATE <client> <state> <session-id>".
	State = "STATE"
	// Killed: "<t> KILLED <client>": the test sent the client SIGKILL.
	Killed = "KILLED"
	// Fault: "<t> FAULT <kind> <detail...>": the test injected a fault.
	Fault = "FAULT"
	// Heal: "<t> HEAL <kind>": the fault was undone.
	Heal = "HEAL"
)

// Event is one parsed log line.
type Event struct {
	T     int64  // CLOCK_MONOTONIC ns
	Kind  string // one of the kinds above
	Actor string // client id, or the fault kind for FAULT and HEAL
	Token int64  // for ACQUIRED, DONE, STOP, RELEASED, WRITE
	Rest  string // the remaining fields
	Line  int    // 1-based line number
}

// hasToken lists the kinds whose third field is a token.
var hasToken = map[string]bool{Acquired: true, Done: true, Stop: true, Released: true, Write: true}

// Parse reads a shared log.
func Parse(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return out, fmt.Errorf("line %d: too few fields: %q", n, line)
		}
		t, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return out, fmt.Errorf("line %d: bad time: %q", n, line)
		}
		ev := Event{T: t, Kind: f[1], Actor: f[2], Line: n}
		rest := f[3:]
		if hasToken[ev.Kind] {
			if len(rest) == 0 {
				return out, fmt.Errorf("line %d: %s without a token: %q", n, ev.Kind, line)
			}
			if ev.Token, err = strconv.ParseInt(rest[0], 10, 64); err != nil {
				return out, fmt.Errorf("line %d: bad token: %q", n, line)
			}
			rest = rest[1:]
		}
		ev.Rest = strings.Join(rest, " ")
		out = append(out, ev)
	}
	return out, sc.Err()
}

// ParseFile reads the shared log at path.
func ParseFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Log appends events to the shared log, one write(2) per line. It is safe
// for concurrent use.
type Log struct {
	mu sync.Mutex
	f  *os.File
}

// OpenLog opens (creating) the shared log at path for appending.
func OpenLog(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &Log{f: f}, nil
}

// Add appends "<now> kind actor fields..." and returns the timestamp.
func (l *Log) Add(kind, actor string, fields ...any) int64 {
	t := Now()
	l.AddAt(t, kind, actor, fields...)
	return t
}

// AddAt appends an event stamped t. Newlines in fields are flattened.
func (l *Log) AddAt(t int64, kind, actor string, fields ...any) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %s", t, kind, actor)
	for _, f := range fields {
		s := strings.ReplaceAll(fmt.Sprint(f), "\n", " ")
		b.WriteString(" ")
		b.WriteString(s)
	}
	b.WriteString("\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.WriteString(b.String())
}

// Close closes the log file.
func (l *Log) Close() error { return l.f.Close() }

// Duration converts a difference of two monotonic stamps.
func Duration(from, to int64) time.Duration { return time.Duration(to - from) }
