package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// The lease curve's third holder: Apache Curator 5.4's InterProcessMutex
// on one CuratorFramework, in a JVM of its own
// (peers/java/CuratorLeaseBench.java), driven over its standard input and
// output, one command and one answer a line.

// CuratorLeaseHeap is the JVM heap limit of Curator's lease holder: room
// for 100,000 held InterProcessMutexes several times over.
const CuratorLeaseHeap = "-Xmx2g"

// curatorStartLimit bounds the JVM's start: its connection and its warm
// lease, until it prints READY.
const curatorStartLimit = time.Minute

// curatorExitLimit is how long a JVM whose standard input closed may take
// to close its client and exit before it is killed by its pid.
const curatorExitLimit = 30 * time.Second

// curatorHolder holds Curator leases in a JVM.
type curatorHolder struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string   // the JVM's standard output, a line at a time; closed at its end
	done   chan struct{} // closed once the JVM has exited
	quit   chan struct{} // closed by close: the reader drops what is left
	stderr lockedBuffer

	mu       sync.Mutex // one command at a time
	broken   error      // set when an answer was given up on: the JVM is killed
	n        int
	sid      int64
	endedSet []bool // from the last readEnded
}

// openCuratorHolder starts the JVM, connected to addr (loopback only) with
// LeaseSessionTimeout sessions; it has acquired and released one lease
// under dir when it returns, so that what the client sets up once is in
// the baseline. The JVM is killed by the kernel should this process die.
func openCuratorHolder(ctx context.Context, addr, dir string) (*curatorHolder, error) {
	if err := peers.LoopbackOnly(addr); err != nil {
		return nil, err
	}
	cp, err := peers.BuildJava(ctx)
	if err != nil {
		return nil, err
	}
	c := &curatorHolder{lines: make(chan string), done: make(chan struct{}), quit: make(chan struct{})}
	c.cmd = exec.Command("java", "-XX:+UseSerialGC", CuratorLeaseHeap, "-cp", cp, "zkrecipes.peers.CuratorLeaseBench",
		addr, dir, strconv.FormatInt(LeaseSessionTimeout.Milliseconds(), 10))
	c.cmd.Stderr = &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("bench: curator lease holder: %w", err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: curator lease holder: %w", err)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: curator lease holder: %w", err)
	}
	go c.read(stdout)
	sctx, cancel := context.WithTimeout(ctx, curatorStartLimit)
	defer cancel()
	ready, err := c.answer(sctx)
	if err == nil && ready != "READY" {
		err = fmt.Errorf("bench: curator lease holder: %q, not READY", ready)
	}
	if err == nil {
		c.sid, err = c.session(ctx)
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// read passes the JVM's output lines on until it ends, then waits for the
// JVM's exit.
func (c *curatorHolder) read(stdout io.Reader) {
	r := bufio.NewReader(stdout)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			break
		}
		select {
		case c.lines <- strings.TrimRight(l, "\r\n"):
		case <-c.quit:
		}
	}
	close(c.lines)
	_ = c.cmd.Wait()
	close(c.done)
}

// answer returns the JVM's next line; the JVM is killed when ctx ends
// first.
func (c *curatorHolder) answer(ctx context.Context) (string, error) {
	select {
	case l, ok := <-c.lines:
		if !ok {
			state := "its output closed"
			select {
			case <-c.done: // the JVM's state is read after its Wait
				state = c.cmd.ProcessState.String()
			case <-time.After(10 * time.Second):
			}
			return "", fmt.Errorf("bench: curator lease holder ended (%s); stderr: %s", state, tailOf(c.stderr.String(), 1000))
		}
		return l, nil
	case <-ctx.Done():
		c.broken = fmt.Errorf("bench: curator lease holder: no answer: %w (killed, pid %d)", ctx.Err(), c.cmd.Process.Pid)
		_ = c.cmd.Process.Kill()
		return "", c.broken
	}
}

// call sends one command and returns its answer; "ERR ..." is an error.
func (c *curatorHolder) call(ctx context.Context, command string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return "", c.broken
	}
	if _, err := io.WriteString(c.stdin, command+"\n"); err != nil {
		return "", fmt.Errorf("bench: curator lease holder: %s: %w; stderr: %s", command, err, tailOf(c.stderr.String(), 1000))
	}
	l, err := c.answer(ctx)
	if err == nil && strings.HasPrefix(l, "ERR") {
		err = errors.New(strings.TrimSpace(strings.TrimPrefix(l, "ERR")))
	}
	if err != nil {
		return "", fmt.Errorf("bench: curator lease holder: %s: %w", command, err)
	}
	return l, nil
}

func (c *curatorHolder) session(ctx context.Context) (int64, error) {
	l, err := c.call(ctx, "session")
	if err != nil {
		return 0, err
	}
	return parseCuratorSession(l)
}

func (c *curatorHolder) hold(ctx context.Context, n int) error {
	if _, err := c.call(ctx, "hold "+strconv.Itoa(n)); err != nil {
		return err
	}
	c.n = n
	return nil
}

func (c *curatorHolder) nodes(ctx context.Context) ([]string, error) {
	l, err := c.call(ctx, "nodes")
	if err != nil {
		return nil, err
	}
	return parseCuratorNodes(l, c.n)
}

// cost is the bytes of the JVM's live objects (its class histogram's
// total, after a full GC), and its live threads.
func (c *curatorHolder) cost(ctx context.Context) (heap float64, threads int, err error) {
	l, err := c.call(ctx, "cost")
	if err != nil {
		return 0, 0, err
	}
	return parseCuratorCost(l)
}

// readEnded asks the JVM which leases it was told may have ended.
func (c *curatorHolder) readEnded(ctx context.Context) error {
	l, err := c.call(ctx, "ended")
	if err != nil {
		return err
	}
	c.endedSet, err = parseCuratorEnded(l, c.n)
	return err
}

// ended reports lease i as the last readEnded read it: Curator told the
// holder of a LOST connection state since the lease was acquired (its
// only news of a lease that may be gone: under the default
// ConnectionStateErrorPolicy a lost connection releases nothing), or the
// mutex is not held any more.
func (c *curatorHolder) ended(i int) bool { return i < len(c.endedSet) && c.endedSet[i] }

// watchesPerLease: an InterProcessMutex that holds its lock watches
// nothing (it watches its predecessor only while waiting).
func (c *curatorHolder) watchesPerLease() int { return 0 }

func (c *curatorHolder) sessionID() int64 { return c.sid }

// armBack tells the JVM to count connections from now; back waits there
// for a CONNECTED or RECONNECTED state, until ctx's deadline (else
// LeaseRecoveryWait), and returns the ZooKeeper handle's session id then.
func (c *curatorHolder) armBack(ctx context.Context) func() (int64, error) {
	_, armErr := c.call(ctx, "arm")
	return func() (int64, error) {
		if armErr != nil {
			return 0, armErr
		}
		wait := LeaseRecoveryWait
		if dl, ok := ctx.Deadline(); ok {
			wait = max(time.Until(dl), time.Millisecond)
		}
		// The JVM answers at its own deadline: a little longer here, so
		// that its answer, not a kill, ends the wait.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+10*time.Second)
		defer cancel()
		l, err := c.call(bctx, "back "+strconv.FormatInt(wait.Milliseconds(), 10))
		if err != nil {
			return 0, err
		}
		if c.sid, err = parseCuratorSession(l); err != nil {
			return 0, err
		}
		return c.sid, nil
	}
}

// close closes the JVM's standard input, on which it closes its client
// (ending the session, its lock nodes with it) and exits; one still
// running curatorExitLimit later is killed by its pid.
func (c *curatorHolder) close() {
	_ = c.stdin.Close()
	close(c.quit)
	select {
	case <-c.done:
	case <-time.After(curatorExitLimit):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// parseCuratorSession reads the answer to "session" or "back": a signed
// decimal session id.
func parseCuratorSession(l string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bench: curator lease holder: session %q: %w", l, err)
	}
	return id, nil
}

// parseCuratorCost reads the answer to "cost",
// {"heap":B,"live":L,"threads":T}, and returns L and T: the used heap B
// counts, after the client's start, about a megabyte that a later GC
// frees (CuratorLeaseBench.java), as much as 1,000 leases hold.
func parseCuratorCost(l string) (live float64, threads int, err error) {
	var v struct {
		Live    *float64 `json:"live"`
		Threads *int     `json:"threads"`
	}
	if err := json.Unmarshal([]byte(l), &v); err != nil || v.Live == nil || v.Threads == nil {
		return 0, 0, fmt.Errorf("bench: curator lease holder: cost %q: want {\"heap\":B,\"live\":L,\"threads\":T} (%v)", tailOf(l, 200), err)
	}
	return *v.Live, *v.Threads, nil
}

// parseCuratorNodes reads the answer to "nodes": a JSON array of n
// absolute paths.
func parseCuratorNodes(l string, n int) ([]string, error) {
	var ps []string
	if err := json.Unmarshal([]byte(l), &ps); err != nil {
		return nil, fmt.Errorf("bench: curator lease holder: nodes %q: %w", tailOf(l, 200), err)
	}
	if len(ps) != n {
		return nil, fmt.Errorf("bench: curator lease holder: %d nodes for %d leases", len(ps), n)
	}
	for i, p := range ps {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("bench: curator lease holder: lease %d's node is %q, no path", i, p)
		}
	}
	return ps, nil
}

// parseCuratorEnded reads the answer to "ended": a JSON array of the
// indices of the leases that ended, each below n.
func parseCuratorEnded(l string, n int) ([]bool, error) {
	var is []int
	if err := json.Unmarshal([]byte(l), &is); err != nil {
		return nil, fmt.Errorf("bench: curator lease holder: ended %q: %w", tailOf(l, 200), err)
	}
	ended := make([]bool, n)
	for _, i := range is {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("bench: curator lease holder: lease %d ended, of %d", i, n)
		}
		ended[i] = true
	}
	return ended, nil
}

// lockedBuffer is a bytes.Buffer that the JVM's stderr copier and a
// reader may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
