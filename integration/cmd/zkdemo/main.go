// Command zkdemo is `make demo`: it starts a throw-away ZooKeeper with the
// zktest harness, runs three replicas of examples/singleton-worker as
// separate processes, kills the active one with SIGKILL, and prints who
// took over, how long it took and the fencing tokens; then it stops a
// second leader cleanly to show a resign hands over at once, and cleans up
// every process and node.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

const (
	electionPath   = "/demo/singleton-worker"
	sessionTimeout = 2 * time.Second
	jobInterval    = 400 * time.Millisecond
	stepTimeout    = 30 * time.Second
)

var start = time.Now()

func say(format string, args ...any) {
	fmt.Printf("[%5.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "zkdemo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fmt.Println("zkrecipes demo: three replicas of a singleton worker; exactly one works at a time.")
	fmt.Println()

	bin, err := buildWorker(ctx)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(bin))

	c, err := zktest.StartCluster(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	say("ZooKeeper started on %s (%s backend, %v)", c.ConnectString(), c.Backend(), c.StartDuration().Round(time.Millisecond))

	events := make(chan event, 64)
	workers := map[string]*worker{}
	defer stopAll(workers)
	for _, id := range []string{"w1", "w2", "w3"} {
		w, err := startWorker(bin, id, c.ConnectString(), events)
		if err != nil {
			return err
		}
		workers[id] = w
	}
	say("started workers w1, w2, w3 as separate processes (session timeout %v)", sessionTimeout)

	// 1. One of them leads and works.
	first, err := waitLeader(ctx, events, "")
	if err != nil {
		return err
	}
	if err := waitJobs(ctx, events, first.id, 2); err != nil {
		return err
	}

	// 2. Kill it without warning.
	victim := workers[first.id]
	killedAt := time.Now()
	say(">>> kill -9 %s (pid %d): the active worker dies without a word", first.id, victim.cmd.Process.Pid)
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	second, err := waitLeader(ctx, events, first.id)
	if err != nil {
		return err
	}
	failover := second.at.Sub(killedAt)
	say("    failover took %v: ZooKeeper had to expire %s's session (timeout %v) first", failover.Round(time.Millisecond), first.id, sessionTimeout)
	if err := waitJobs(ctx, events, second.id, 2); err != nil {
		return err
	}

	// 3. Stop the new leader cleanly: it resigns, the last one takes over at once.
	stoppedAt := time.Now()
	say(">>> SIGTERM %s: a clean stop resigns leadership", second.id)
	_ = workers[second.id].cmd.Process.Signal(syscall.SIGTERM)
	third, err := waitLeader(ctx, events, first.id, second.id)
	if err != nil {
		return err
	}
	handover := third.at.Sub(stoppedAt)
	say("    handover took %v", handover.Round(time.Millisecond))
	if err := waitJobs(ctx, events, third.id, 1); err != nil {
		return err
	}

	// 4. Clean up and check nothing is left.
	say(">>> stopping %s", third.id)
	stopAll(workers)
	left, err := nodesLeft(ctx, c.Servers())
	if err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		return err
	}
	say("workers ended, ZooKeeper stopped")

	fmt.Println()
	fmt.Println("Summary")
	fmt.Printf("  leaders in turn     : %s -> %s -> %s, never two at once\n", first.id, second.id, third.id)
	fmt.Printf("  failover after kill : %v (bounded by the %v session timeout)\n", failover.Round(time.Millisecond), sessionTimeout)
	fmt.Printf("  handover on resign  : %v\n", handover.Round(time.Millisecond))
	fmt.Printf("  fencing tokens      : %s=%d < %s=%d < %s=%d; a store that refuses lower tokens rejects any late write of a deposed leader\n",
		first.id, first.token, second.id, second.token, third.id, third.token)
	fmt.Printf("  clean-up            : 3 worker processes ended, %d election node(s) left, ZooKeeper stopped\n", left)
	if !(first.token < second.token && second.token < third.token) {
		return errors.New("fencing tokens did not increase")
	}
	if left != 0 {
		return fmt.Errorf("%d node(s) left under %s", left, electionPath)
	}
	return nil
}

// buildWorker compiles examples/singleton-worker into a temporary directory.
func buildWorker(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/zkrecipes/zkrecipes").Output()
	if err != nil {
		return "", fmt.Errorf("locate the zkrecipes module: %w", err)
	}
	root := strings.TrimSpace(string(out))
	dir, err := os.MkdirTemp("", "zkdemo-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "singleton-worker")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/singleton-worker")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build examples/singleton-worker: %v\n%s", err, b)
	}
	return bin, nil
}

type worker struct {
	id     string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
}

// event is one line a worker printed, with when the demo read it.
type event struct {
	id   string
	line string
	at   time.Time
}

func startWorker(bin, id, servers string, events chan<- event) (*worker, error) {
	w := &worker{id: id, done: make(chan struct{})}
	w.cmd = exec.Command(bin, "-id", id, "-path", electionPath,
		"-session-timeout", sessionTimeout.String(), "-interval", jobInterval.String())
	w.cmd.Env = append(os.Environ(), "ZK_SERVERS="+servers)
	w.cmd.Stderr = &w.stderr
	w.cmd.SysProcAttr = workerProcAttr()
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			fmt.Printf("          | %s\n", line)
			events <- event{id: id, line: line, at: time.Now()}
		}
		_ = w.cmd.Wait()
		close(w.done)
	}()
	return w, nil
}

// stopAll ends every worker still running: SIGTERM, then SIGKILL after 5s.
func stopAll(workers map[string]*worker) {
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-w.done:
				return
			default:
			}
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-w.done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
				<-w.done
			}
		}()
	}
	wg.Wait()
}

var (
	leaderLine = regexp.MustCompile(`^(\S+): leader \(token (\d+)\)$`)
	jobLine    = regexp.MustCompile(`^(\S+): job \d+ done`)
)

type leader struct {
	id    string
	token int64
	at    time.Time
}

// current is the last worker that announced leadership: a job reported by
// any other worker means two worked at once.
var current string

// checkJob fails when a worker other than the current leader did a job.
func checkJob(ev event) error {
	if m := jobLine.FindStringSubmatch(ev.line); m != nil && m[1] != current {
		return fmt.Errorf("%s worked while %s leads", m[1], current)
	}
	return nil
}

// waitLeader waits for a worker not in skip to announce leadership.
func waitLeader(ctx context.Context, events <-chan event, skip ...string) (leader, error) {
	timeout := time.After(stepTimeout)
	for {
		select {
		case ev := <-events:
			if err := checkJob(ev); err != nil {
				return leader{}, err
			}
			m := leaderLine.FindStringSubmatch(ev.line)
			if m == nil || contains(skip, m[1]) {
				continue
			}
			current = m[1]
			tok, _ := strconv.ParseInt(m[2], 10, 64)
			say("%s is the leader, fencing token %d", m[1], tok)
			return leader{id: m[1], token: tok, at: ev.at}, nil
		case <-timeout:
			return leader{}, fmt.Errorf("no new leader within %v", stepTimeout)
		case <-ctx.Done():
			return leader{}, ctx.Err()
		}
	}
}

// waitJobs waits until worker id reports n jobs done, and fails if a
// worker other than the current leader reports one meanwhile.
func waitJobs(ctx context.Context, events <-chan event, id string, n int) error {
	timeout := time.After(stepTimeout)
	for n > 0 {
		select {
		case ev := <-events:
			if err := checkJob(ev); err != nil {
				return err
			}
			if m := jobLine.FindStringSubmatch(ev.line); m != nil && m[1] == id {
				n--
			}
		case <-timeout:
			return fmt.Errorf("%s did no job within %v", id, stepTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// nodesLeft counts the election's nodes from a fresh client.
func nodesLeft(ctx context.Context, servers []string) (int, error) {
	s, err := zr.Connect(ctx, servers)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	ps, err := zr.NewElection(s, electionPath).Participants(ctx)
	return len(ps), err
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
