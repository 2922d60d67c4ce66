package peers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name       string
		log        string
		opts       []CheckOption
		violations []string // substrings, one per expected violation, in order
		acq        map[string]int
		maxWriters int
		maxReaders int
		maxLeases  int
		maxLeaders int
		open       int
	}{
		{
			name:       "alternating mutex",
			log:        "ENTER a 0000000001\nEXIT a\nENTER b 0000000002\nEXIT b\nENTER a 0000000003\nEXIT a\n",
			acq:        map[string]int{"a": 2, "b": 1},
			maxWriters: 1,
		},
		{
			name:       "enter while another is inside",
			log:        "ENTER a 1\nENTER b 2\nEXIT a\nEXIT b\n",
			violations: []string{"line 2: ENTER b while inside: writer a (since line 1)"},
			acq:        map[string]int{"a": 1, "b": 1},
			maxWriters: 2,
		},
		{
			name:       "same id enters twice",
			log:        "ENTER a 1\nENTER a 2\nEXIT a\nEXIT a\n",
			violations: []string{"line 2: ENTER a while inside"},
			acq:        map[string]int{"a": 2},
			maxWriters: 2,
		},
		{
			name:       "exit by the wrong id",
			log:        "ENTER a 1\nEXIT b\nEXIT a\n",
			violations: []string{"line 2: EXIT b without a matching ENTER (inside: writer a (since line 1))"},
			acq:        map[string]int{"a": 1},
			maxWriters: 1,
		},
		{
			name:       "exit without enter",
			log:        "EXIT a\n",
			violations: []string{"line 1: EXIT a without a matching ENTER (inside: nobody)"},
			acq:        map[string]int{},
		},
		{
			name:       "readers overlap",
			log:        "RENTER r1 -\nRENTER r2 -\nREXIT r1\nREXIT r2\nENTER w 5\nEXIT w\n",
			acq:        map[string]int{"r1": 1, "r2": 1, "w": 1},
			maxWriters: 1,
			maxReaders: 2,
		},
		{
			name:       "reader while writer inside",
			log:        "ENTER w 1\nRENTER r -\nEXIT w\nREXIT r\n",
			violations: []string{"line 2: RENTER r while inside: writer w (since line 1)"},
			acq:        map[string]int{"w": 1, "r": 1},
			maxWriters: 1,
			maxReaders: 1,
		},
		{
			name:       "writer while reader inside",
			log:        "RENTER r -\nENTER w 1\nEXIT w\nREXIT r\n",
			violations: []string{"line 2: ENTER w while inside: reader r (since line 1)"},
			acq:        map[string]int{"w": 1, "r": 1},
			maxWriters: 1,
			maxReaders: 1,
		},
		{
			name:       "unmatched rexit",
			log:        "REXIT r\n",
			violations: []string{"line 1: REXIT r without a matching RENTER"},
			acq:        map[string]int{},
		},
		{
			name:      "semaphore within bound",
			log:       "SENTER a 1\nSENTER b 2\nSEXIT a\nSENTER c 3\nSEXIT b\nSEXIT c\n",
			opts:      []CheckOption{MaxLeases(2)},
			acq:       map[string]int{"a": 1, "b": 1, "c": 1},
			maxLeases: 2,
		},
		{
			name:       "semaphore above bound",
			log:        "SENTER a 1\nSENTER b 2\nSENTER c 3\nSEXIT a\nSEXIT b\nSEXIT c\n",
			opts:       []CheckOption{MaxLeases(2)},
			violations: []string{"line 3: SENTER c makes 3 holders, max 2"},
			acq:        map[string]int{"a": 1, "b": 1, "c": 1},
			maxLeases:  3,
		},
		{
			name:      "semaphore without a bound is only measured",
			log:       "SENTER a 1\nSENTER b 2\nSENTER c 3\nSEXIT a\nSEXIT b\nSEXIT c\n",
			acq:       map[string]int{"a": 1, "b": 1, "c": 1},
			maxLeases: 3,
		},
		{
			name:       "semaphore and mutex are independent",
			log:        "SENTER a 1\nENTER b 2\nEXIT b\nSEXIT a\n",
			opts:       []CheckOption{MaxLeases(1)},
			acq:        map[string]int{"a": 1, "b": 1},
			maxWriters: 1,
			maxLeases:  1,
		},
		{
			name:       "leaders in turn",
			log:        "LEAD a 1\nUNLEAD a\nLEAD b 2\nUNLEAD b\n",
			acq:        map[string]int{"a": 1, "b": 1},
			maxLeaders: 1,
		},
		{
			name:       "two leaders",
			log:        "LEAD a 1\nLEAD b 2\nUNLEAD a\nUNLEAD b\n",
			violations: []string{"line 2: LEAD b while another leads: leader a (since line 1)"},
			acq:        map[string]int{"a": 1, "b": 1},
			maxLeaders: 2,
		},
		{
			name:       "unlead without lead",
			log:        "UNLEAD a\n",
			violations: []string{"line 1: UNLEAD a without a matching LEAD (leading: nobody)"},
			acq:        map[string]int{},
		},
		{
			name:       "holder still inside at the end",
			log:        "ENTER a 1\nEXIT a\nENTER b 2\n",
			acq:        map[string]int{"a": 1, "b": 1},
			maxWriters: 1,
			open:       1,
		},
		{
			name:       "timestamps and blank lines",
			log:        "ENTER a 1 1000\nEXIT a 2000\n\nENTER b 2 2500\nEXIT b 3000\n",
			acq:        map[string]int{"a": 1, "b": 1},
			maxWriters: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(strings.NewReader(tt.log), tt.opts...)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if len(rep.Violations) != len(tt.violations) {
				t.Fatalf("violations = %q, want %d like %q", rep.Violations, len(tt.violations), tt.violations)
			}
			for i, want := range tt.violations {
				if !strings.Contains(rep.Violations[i], want) {
					t.Errorf("violation %d = %q, want it to contain %q", i, rep.Violations[i], want)
				}
			}
			if len(rep.Acquisitions) != len(tt.acq) {
				t.Errorf("acquisitions = %v, want %v", rep.Acquisitions, tt.acq)
			}
			for id, n := range tt.acq {
				if rep.Acquisitions[id] != n {
					t.Errorf("acquisitions[%s] = %d, want %d", id, rep.Acquisitions[id], n)
				}
			}
			if rep.MaxWriters != tt.maxWriters || rep.MaxReaders != tt.maxReaders ||
				rep.MaxLeases != tt.maxLeases || rep.MaxLeaders != tt.maxLeaders {
				t.Errorf("max writers/readers/leases/leaders = %d/%d/%d/%d, want %d/%d/%d/%d",
					rep.MaxWriters, rep.MaxReaders, rep.MaxLeases, rep.MaxLeaders,
					tt.maxWriters, tt.maxReaders, tt.maxLeases, tt.maxLeaders)
			}
			if len(rep.Open) != tt.open {
				t.Errorf("open = %q, want %d", rep.Open, tt.open)
			}
		})
	}
}

func TestCheckMaxConcurrent(t *testing.T) {
	rep, err := Check(strings.NewReader("RENTER a -\nRENTER b -\nRENTER c -\nREXIT a\nREXIT b\nREXIT c\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.MaxConcurrent != 3 || rep.MaxReaders != 3 {
		t.Errorf("MaxConcurrent = %d, MaxReaders = %d, want 3 and 3", rep.MaxConcurrent, rep.MaxReaders)
	}
}

func TestCheckHandoffs(t *testing.T) {
	// a -> b is a handoff (500 ns); b -> b is not (same id); b -> c with no timestamp is skipped.
	log := "ENTER a 1 1000\nEXIT a 2000\nENTER b 2 2500\nEXIT b 3000\nENTER b 3 3100\nEXIT b 3200\nENTER c 4\nEXIT c\n"
	rep, err := Check(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Handoffs) != 1 || rep.Handoffs[0] != 500*time.Nanosecond {
		t.Errorf("handoffs = %v, want [500ns]", rep.Handoffs)
	}
	if got := Percentile([]time.Duration{3, 1, 2, 4}, 0.5); got != 2 {
		t.Errorf("Percentile p50 = %v, want 2", got)
	}
	if got := Percentile([]time.Duration{3, 1, 2, 4}, 0.99); got != 4 {
		t.Errorf("Percentile p99 = %v, want 4", got)
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
}

func TestCheckMalformed(t *testing.T) {
	for _, log := range []string{
		"ENTER\n",
		"JUMP a 1\n",
		"ENTER a 1 notanumber\n",
		"EXIT a 1 2\n",
		"ENTER a 1 2 3\n",
	} {
		if _, err := Check(strings.NewReader(log)); err == nil {
			t.Errorf("Check(%q) = nil error, want a parse error", log)
		}
	}
}

func TestCheckLogFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(p, []byte("ENTER a 1\nENTER b 2\nEXIT b\nEXIT a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckLog(p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lines != 4 || len(rep.Violations) != 1 {
		t.Errorf("lines = %d, violations = %q; want 4 lines and 1 violation", rep.Lines, rep.Violations)
	}
	if _, err := CheckLog(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("CheckLog of a missing file: want an error")
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:2181", "127.0.0.1:1,127.0.0.2:2/chroot"} {
		if err := LoopbackOnly(ok); err != nil {
			t.Errorf("LoopbackOnly(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"10.0.0.1:2181", "localhost:2181", "127.0.0.1:1,192.168.0.1:2", "[::1]:2181", "127.0.0.1"} {
		if err := LoopbackOnly(bad); err == nil {
			t.Errorf("LoopbackOnly(%q) = nil, want an error", bad)
		}
	}
}

// TestBuildJava compiles the Curator peer (no server needed) and reports how long it took.
func TestBuildJava(t *testing.T) {
	if err := Available(Curator); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	start := time.Now()
	cp, err := BuildJava(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	classes := strings.SplitN(cp, string(os.PathListSeparator), 2)[0]
	if _, err := os.Stat(filepath.Join(classes, "zkrecipes", "peers", "CuratorPeer.class")); err != nil {
		t.Errorf("classpath %q lacks the compiled peer: %v", cp, err)
	}
	t.Logf("BuildJava took %v (cached when the sources are unchanged)", time.Since(start))
}
