package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

func TestParseMixesFlagsAndPositionalsUpToDoubleDash(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		pos, rest []string
		wait      string
	}{
		{[]string{"/p", "--", "echo", "--wait", "x"}, []string{"/p"}, []string{"echo", "--wait", "x"}, ""},
		{[]string{"--wait", "1s", "/p", "--", "true"}, []string{"/p"}, []string{"true"}, "1s"},
		{[]string{"/p", "--wait", "2s", "--", "true"}, []string{"/p"}, []string{"true"}, "2s"},
		{[]string{"/p", "/q"}, []string{"/p", "/q"}, nil, ""},
		{[]string{"/p", "--"}, []string{"/p"}, []string{}, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		wait := fs.String("wait", "", "")
		pos, rest, err := parse(fs, tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if !equal(pos, tc.pos) || !equal(rest, tc.rest) || (rest == nil) != (tc.rest == nil) || *wait != tc.wait {
			t.Errorf("%q: got pos %q rest %q wait %q; want %q %q %q", tc.args, pos, rest, *wait, tc.pos, tc.rest, tc.wait)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, _, err := parse(fs, []string{"/p", "--nope", "--", "true"}); err == nil {
		t.Error("an unknown flag is an error")
	}
}

func TestKindAndQueueOrderOfInspect(t *testing.T) {
	for want, kids := range map[string][]string{
		"mutex":           {"_c_x-lock-0000000001", "abc__lock__0000000002"},
		"read-write lock": {"_c_x-__READ__0000000001", "_c_y-__WRIT__0000000002"},
		"semaphore":       {"locks", "leases"},
		"leader latch":    {"_c_x-latch-0000000003"},
		"none":            {},
	} {
		if got := kindOf(kids); got != want {
			t.Errorf("kindOf(%q) = %q, want %q", kids, got, want)
		}
	}
	if !(seqOf("ffff__lock__0000000001") < seqOf("_c_a-lock-0000000002")) {
		t.Error("nodes sort by their trailing sequence, whoever wrote them")
	}
	if !(seqOf("_c_a-lock-9999999999") < seqOf("foreign")) {
		t.Error("names without a sequence sort last")
	}
}

func TestRunRejectsUnknownCommands(t *testing.T) {
	if got := run([]string{"bogus"}); got != exitUsage {
		t.Errorf("exit %d, want %d", got, exitUsage)
	}
	if got := run(nil); got != exitUsage {
		t.Errorf("exit %d, want %d", got, exitUsage)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// --help prints a command's usage once, and exits 0.
func TestHelpPrintsTheUsageOnce(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	code := run([]string{"lock", "--help"})
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	if code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	if n := strings.Count(string(out), "usage: zkr lock"); n != 1 {
		t.Errorf("the usage is printed %d times:\n%s", n, out)
	}
}

func TestVersion_TakesNoArguments(t *testing.T) {
	if got := run([]string{"version"}); got != 0 {
		t.Fatalf("zkr version exited %d, want 0", got)
	}
	if got := run([]string{"version", "extra"}); got != exitUsage {
		t.Fatalf("zkr version extra exited %d, want %d (usage)", got, exitUsage)
	}
}
