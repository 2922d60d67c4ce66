package peers

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is what CheckLog found in a shared log.
type Report struct {
	// Lines is the number of log lines read.
	Lines int
	// Acquisitions counts, per participant id, its ENTER, RENTER, SENTER and LEAD lines.
	Acquisitions map[string]int
	// Violations describes every breach of exclusion, with line numbers, in log order.
	Violations []string
	// MaxConcurrent is the largest number of holders of any kind inside at once.
	MaxConcurrent int
	// MaxWriters is the largest number of ENTER holders inside at once (1 when correct).
	MaxWriters int
	// MaxReaders is the largest number of RENTER holders inside at once.
	MaxReaders int
	// MaxLeases is the largest number of SENTER holders inside at once.
	MaxLeases int
	// MaxLeaders is the largest number of LEAD holders inside at once (1 when correct).
	MaxLeaders int
	// Handoffs holds, in log order, the wall-clock gap from an EXIT to the next
	// ENTER of a different id when nobody was inside in between; it is filled only
	// when the lines carry timestamps. The gap spans the releaser's delete, the
	// notification and the successor's check.
	Handoffs []time.Duration
	// Open lists holders still inside when the log ends (a peer that was killed,
	// or a log read while peers run); not a violation by itself.
	Open []string
}

// CheckOption adjusts CheckLog.
type CheckOption func(*checkConfig)

type checkConfig struct {
	maxLeases int
}

// MaxLeases makes more than n SENTER holders inside at once a violation.
// Without it the semaphore bound is not checked (see Report.MaxLeases).
func MaxLeases(n int) CheckOption {
	return func(c *checkConfig) { c.maxLeases = n }
}

// CheckLog reads the shared log at path and checks exclusion from the outside.
//
// A log line is "OP ID [TOKEN] [UNIX_NANOS]" for the acquiring ops ENTER, RENTER,
// SENTER and LEAD, and "OP ID [UNIX_NANOS]" for EXIT, REXIT, SEXIT and UNLEAD.
// The rules: an ENTER while any writer or reader is inside is a violation; an
// RENTER while a writer is inside is a violation (readers may overlap); with
// MaxLeases(n), an SENTER that makes more than n holders is a violation; a LEAD
// while another leader has not logged UNLEAD is a violation; every exit op must
// match an id that is inside. Lock (ENTER/RENTER), semaphore and leadership lines
// are checked independently of each other. A malformed line is an error.
func CheckLog(path string, opts ...CheckOption) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	return Check(f, opts...)
}

// Check is CheckLog on a reader.
func Check(r io.Reader, opts ...CheckOption) (Report, error) {
	var cfg checkConfig
	for _, o := range opts {
		o(&cfg)
	}
	c := checker{
		cfg:     cfg,
		rep:     Report{Acquisitions: map[string]int{}},
		writers: holders{name: "writer"},
		readers: holders{name: "reader"},
		leases:  holders{name: "lease holder"},
		leaders: holders{name: "leader"},
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if err := c.line(n, line); err != nil {
			return c.rep, err
		}
	}
	if err := sc.Err(); err != nil {
		return c.rep, err
	}
	c.rep.Lines = n
	for _, h := range []*holders{&c.writers, &c.readers, &c.leases, &c.leaders} {
		c.rep.Open = append(c.rep.Open, h.open()...)
	}
	return c.rep, nil
}

// holders tracks who is inside one kind of critical section, with the line each entered on.
type holders struct {
	name  string
	lines map[string][]int // id -> lines of its unmatched enters
	n     int
}

func (h *holders) enter(id string, line int) {
	if h.lines == nil {
		h.lines = map[string][]int{}
	}
	h.lines[id] = append(h.lines[id], line)
	h.n++
}

// exit reports false when id is not inside.
func (h *holders) exit(id string) bool {
	ls := h.lines[id]
	if len(ls) == 0 {
		return false
	}
	h.lines[id] = ls[:len(ls)-1]
	if len(h.lines[id]) == 0 {
		delete(h.lines, id)
	}
	h.n--
	return true
}

// describe lists who is inside, for a violation message.
func (h *holders) describe() string {
	var parts []string
	for id, ls := range h.lines {
		for _, l := range ls {
			parts = append(parts, fmt.Sprintf("%s %s (since line %d)", h.name, id, l))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func (h *holders) open() []string {
	var out []string
	for id, ls := range h.lines {
		for _, l := range ls {
			out = append(out, fmt.Sprintf("%s %s entered at line %d never exited", h.name, id, l))
		}
	}
	sort.Strings(out)
	return out
}

type checker struct {
	cfg                               checkConfig
	rep                               Report
	writers, readers, leases, leaders holders

	// for Report.Handoffs: the last EXIT of the lock domain, when it left the lock free
	lastExitID string
	lastExitTS int64
}

func (c *checker) violate(format string, args ...any) {
	c.rep.Violations = append(c.rep.Violations, fmt.Sprintf(format, args...))
}

func (c *checker) line(n int, line string) error {
	f := strings.Fields(line)
	if len(f) < 2 {
		return fmt.Errorf("line %d: malformed %q", n, line)
	}
	op, id := f[0], f[1]
	var ts int64
	tsField := func(i int) error {
		if len(f) <= i {
			return nil
		}
		if len(f) > i+1 {
			return fmt.Errorf("line %d: too many fields in %q", n, line)
		}
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: bad timestamp in %q", n, line)
		}
		ts = v
		return nil
	}
	switch op {
	case "ENTER", "RENTER", "SENTER", "LEAD":
		if err := tsField(3); err != nil {
			return err
		}
		c.rep.Acquisitions[id]++
	case "EXIT", "REXIT", "SEXIT", "UNLEAD":
		if err := tsField(2); err != nil {
			return err
		}
	default:
		return fmt.Errorf("line %d: unknown op %q", n, op)
	}

	switch op {
	case "ENTER":
		if c.writers.n > 0 || c.readers.n > 0 {
			c.violate("line %d: ENTER %s while inside: %s", n, id, joinNonEmpty(c.writers.describe(), c.readers.describe()))
		} else if ts != 0 && c.lastExitTS != 0 && c.lastExitID != id {
			c.rep.Handoffs = append(c.rep.Handoffs, time.Duration(ts-c.lastExitTS))
		}
		c.lastExitTS = 0
		c.writers.enter(id, n)
	case "EXIT":
		if !c.writers.exit(id) {
			c.violate("line %d: EXIT %s without a matching ENTER (inside: %s)", n, id, orNobody(c.writers.describe()))
		}
		if c.writers.n == 0 && c.readers.n == 0 {
			c.lastExitID, c.lastExitTS = id, ts
		}
	case "RENTER":
		if c.writers.n > 0 {
			c.violate("line %d: RENTER %s while inside: %s", n, id, c.writers.describe())
		}
		c.lastExitTS = 0
		c.readers.enter(id, n)
	case "REXIT":
		if !c.readers.exit(id) {
			c.violate("line %d: REXIT %s without a matching RENTER", n, id)
		}
	case "SENTER":
		c.leases.enter(id, n)
		if c.cfg.maxLeases > 0 && c.leases.n > c.cfg.maxLeases {
			c.violate("line %d: SENTER %s makes %d holders, max %d: %s", n, id, c.leases.n, c.cfg.maxLeases, c.leases.describe())
		}
	case "SEXIT":
		if !c.leases.exit(id) {
			c.violate("line %d: SEXIT %s without a matching SENTER", n, id)
		}
	case "LEAD":
		if c.leaders.n > 0 {
			c.violate("line %d: LEAD %s while another leads: %s", n, id, c.leaders.describe())
		}
		c.leaders.enter(id, n)
	case "UNLEAD":
		if !c.leaders.exit(id) {
			c.violate("line %d: UNLEAD %s without a matching LEAD (leading: %s)", n, id, orNobody(c.leaders.describe()))
		}
	}

	c.rep.MaxWriters = max(c.rep.MaxWriters, c.writers.n)
	c.rep.MaxReaders = max(c.rep.MaxReaders, c.readers.n)
	c.rep.MaxLeases = max(c.rep.MaxLeases, c.leases.n)
	c.rep.MaxLeaders = max(c.rep.MaxLeaders, c.leaders.n)
	c.rep.MaxConcurrent = max(c.rep.MaxConcurrent, c.writers.n+c.readers.n+c.leases.n+c.leaders.n)
	return nil
}

func joinNonEmpty(parts ...string) string {
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	return strings.Join(parts, ", ")
}

func orNobody(s string) string {
	if s == "" {
		return "nobody"
	}
	return s
}

// Percentile returns the q-quantile (0 < q <= 1, nearest rank) of ds, or 0 when ds is empty.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*q)) - 1
	return s[min(max(i, 0), len(s)-1)]
}
