package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// Bad flags and arguments of the node commands are usage errors (64),
// found before any connection: the server given is never dialled (port
// 1 on loopback would refuse it, and the exit status would be 69).
func TestNodeCommandsRefuseBadArgumentsBeforeConnecting(t *testing.T) {
	srv := []string{"--servers", "127.0.0.1:1", "--connect-timeout", "1s"}
	for _, args := range [][]string{
		{"ls"}, {"ls", "/a", "-R", "-v", "1"}, {"get", "/a", "/b"}, {"stat"},
		{"set", "/a"}, {"set", "/a", "x", "-v", "-2147483649"}, {"set", "/a", "x", "--", "y"},
		{"create", "-e", "/a"}, {"create", "-c", "-s", "/a"}, {"create", "--ttl", "-1s", "/a"},
		{"rm", "/a", "-v", "x"}, {"rm", "/a", "--", "b"},
	} {
		if got := run(append(args, srv...)); got != exitUsage {
			t.Errorf("zkr %q: exit %d, want %d", args, got, exitUsage)
		}
	}
}

// zkr help lists every node command, and each one's --help tells its
// exit statuses.
func TestHelpListsTheNodeCommandsAndTheirExitStatuses(t *testing.T) {
	for _, cmd := range []string{"ls", "get", "stat", "set", "create", "rm"} {
		if !strings.Contains(usage, "zkr "+cmd+" PATH") {
			t.Errorf("zkr help does not list zkr %s", cmd)
		}
		out, code := capture(t, func() int { return run([]string{cmd, "--help"}) })
		if code != 0 || strings.Count(out, "usage: zkr "+cmd) != 1 || !strings.Contains(out, "66 no such node") {
			t.Errorf("zkr %s --help: exit %d\n%s", cmd, code, out)
		}
	}
}

// capture runs fn with stdout captured.
func capture(t *testing.T, fn func() int) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	code := fn()
	os.Stdout = stdout
	w.Close()
	return string(<-done), code
}
