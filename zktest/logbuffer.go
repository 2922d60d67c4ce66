package zktest

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer collects what is written to it so that a test can read it while
// writers are still at it: a process's output (as an exec.Cmd's Stdout or
// Stderr), a logger's lines. It is safe for concurrent use. The zero value is
// an empty buffer ready for use; a LogBuffer must not be copied after first use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer. It always returns len(p), nil.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Count returns the number of non-overlapping occurrences of s in what was
// written so far.
func (l *LogBuffer) Count(s string) int { return strings.Count(l.String(), s) }
