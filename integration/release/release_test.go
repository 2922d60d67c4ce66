// Package release_test proves a release as a user meets it: the repository is cloned, the
// release script tags it, the tagged modules are served by a file module proxy, and an
// empty module with no replace and no workspace gets otelzk, kerberos and the zktest
// harness, installs zkr, takes a lock on a real ZooKeeper and runs a test of its own on a
// server zktest starts. It also shows that the API check fails on an
// incompatible change. scripts/test.sh runs it as a stage of its own (release).
package release_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// version is what the release script tags the clone with: a version of its own for each
// run, since the user's go command shares the machine's module cache (and with it the
// build cache's compiled third-party packages), where a version once fetched is never
// fetched again. The test removes what it added there.
var version = fmt.Sprintf("v0.0.1-test.%d", time.Now().UnixNano())

const prefix = "github.com/zkrecipes/zkrecipes"

// userProgram is a user's main package: it imports every published library module and
// takes a lock on the servers in ZK_SERVERS.
const userProgram = `package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/kerberos"
	"github.com/zkrecipes/zkrecipes/otelzk"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "user:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	obs, err := otelzk.New()
	if err != nil {
		return err
	}
	_ = kerberos.WithServiceName // the Kerberos module resolves and builds
	s, err := zkrecipes.Connect(ctx, strings.Split(os.Getenv("ZK_SERVERS"), ","), zkrecipes.WithObserver(obs))
	if err != nil {
		return err
	}
	defer s.Close()
	lease, err := zkrecipes.NewMutex(s, "/release-test/lock").Acquire(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("lock held, fencing token %d\n", lease.Token())
	return lease.Release(ctx)
}
`

// userTest is a user's test of their own: it imports zktest (alone: no Docker backend)
// for a real server and takes a lock there.
const userTest = `package main

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

func TestUserLockOnAServerZktestStarts(t *testing.T) {
	c := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := zkrecipes.Connect(ctx, c.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lease, err := zkrecipes.NewMutex(s, "/user-test/lock").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("zktest %s backend: lock taken and released", c.Backend())
}
`

// published are the directories of the modules release.sh tags, "." for the core.
var published = []string{".", "otelzk", "kerberos", "cmd/zkr", "zktest", "zktest/docker"}

// heavy are module paths of the repository's own suites' dependencies that a user of
// zktest alone must never download (the Docker backend is a module of its own).
var heavy = []string{
	"github.com/testcontainers/testcontainers-go", "github.com/moby/moby", "github.com/anishathalye/porcupine",
	"gonum.org/v1/plot", "github.com/miekg/dns",
}

// repoRoot is the top level of the repository this test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(run(t, ".", nil, "git", "rev-parse", "--show-toplevel"))
}

// cloneAt clones the repository into dir at what is checked out here, with the changes
// to tracked files that are not committed yet (git stash create), and no release tags.
func cloneAt(t *testing.T, dir string) string {
	t.Helper()
	root := repoRoot(t)
	rev := strings.TrimSpace(run(t, root, nil, "git", "stash", "create"))
	if rev == "" {
		rev = strings.TrimSpace(run(t, root, nil, "git", "rev-parse", "HEAD"))
	}
	clone := filepath.Join(dir, "repo")
	run(t, dir, nil, "git", "clone", "-q", "--no-hardlinks", root, clone)
	run(t, clone, nil, "git", "checkout", "-q", "--detach", rev)
	for _, tag := range strings.Fields(run(t, clone, nil, "git", "tag", "-l", "*"+version)) {
		run(t, clone, nil, "git", "tag", "-d", tag)
	}
	return clone
}

var gitIdentity = []string{
	"GIT_AUTHOR_NAME=release test", "GIT_AUTHOR_EMAIL=release-test@example.invalid",
	"GIT_COMMITTER_NAME=release test", "GIT_COMMITTER_EMAIL=release-test@example.invalid",
}

// goEnv reads one value of the machine's go env.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	return strings.TrimSpace(run(t, ".", nil, "go", "env", name))
}

// userEnv is the environment of a user whose GOPROXY serves the tagged modules first,
// then what the machine's GOPROXY serves: no workspace, and the repository's modules
// exempt from the checksum database, which has never seen them.
func userEnv(t *testing.T, proxy, dir string) []string {
	return []string{
		"GOWORK=off",
		"GOFLAGS=-mod=mod -modcacherw " + goEnv(t, "GOFLAGS"),
		"GOPROXY=file://" + proxy + "," + goEnv(t, "GOPROXY"),
		"GONOSUMDB=github.com/zkrecipes", "GOPRIVATE=", "GONOPROXY=",
		"GOTOOLCHAIN=local",
		"GOBIN=" + filepath.Join(dir, "bin"),
	}
}

// forgetVersion removes the test's version of the repository's modules from the machine's
// module cache, where the user's go command put them (writable: -modcacherw).
func forgetVersion(t *testing.T) {
	cache := goEnv(t, "GOMODCACHE")
	for _, pattern := range []string{
		filepath.Join(cache, prefix+"@"+version),
		filepath.Join(cache, prefix, "*@"+version),
		filepath.Join(cache, prefix, "*", "*@"+version),
		filepath.Join(cache, "cache", "download", prefix, "@v", version+".*"),
		filepath.Join(cache, "cache", "download", prefix, "*", "@v", version+".*"),
		filepath.Join(cache, "cache", "download", prefix, "*", "*", "@v", version+".*"),
	} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				t.Errorf("removing %s from the module cache: %v", m, err)
			}
		}
	}
	// The go command also noted the version in each module's list of known versions.
	for _, pattern := range []string{"@v", "*/@v", "*/*/@v"} {
		lists, _ := filepath.Glob(filepath.Join(cache, "cache", "download", prefix, pattern, "list"))
		for _, l := range lists {
			data, err := os.ReadFile(l)
			if err != nil {
				continue
			}
			var keep []string
			for _, v := range strings.Fields(string(data)) {
				if v != version {
					keep = append(keep, v)
				}
			}
			if len(keep) == len(strings.Fields(string(data))) {
				continue
			}
			if len(keep) == 0 {
				err = os.Remove(l)
			} else {
				err = os.WriteFile(l, []byte(strings.Join(keep, "\n")+"\n"), 0o644)
			}
			if err != nil {
				t.Errorf("removing %s from %s: %v", version, l, err)
			}
		}
	}
}

// TestRelease_UserGetsTaggedModulesFromAProxyAndTakesALock is the release as a user meets
// it, with the go command's module proxy protocol and no replace anywhere.
func TestRelease_UserGetsTaggedModulesFromAProxyAndTakesALock(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { forgetVersion(t) })
	clone := cloneAt(t, dir)

	// The release: one commit, a tag per published module, nothing pushed.
	run(t, clone, gitIdentity, "scripts/release.sh", version)
	tags := strings.Fields(run(t, clone, nil, "git", "tag", "--points-at", "HEAD"))
	for _, m := range published {
		want := m + "/" + version
		if m == "." {
			want = version
		}
		if !slices.Contains(tags, want) {
			t.Fatalf("release.sh tagged %v; %s is missing", tags, want)
		}
	}
	if slices.Contains(tags, "integration/"+version) {
		t.Fatalf("release.sh tagged %v: the integration module is not published", tags)
	}
	for _, m := range []struct{ dir, requires string }{
		{"otelzk", prefix}, {"kerberos", prefix}, {"cmd/zkr", prefix}, {"integration", prefix},
		{"otelzk", prefix + "/zktest"}, {"integration", prefix + "/zktest"}, {"zktest/docker", prefix + "/zktest"},
	} {
		gomod, err := os.ReadFile(filepath.Join(clone, m.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(gomod, []byte("replace")) || !bytes.Contains(gomod, []byte(m.requires+" "+version)) {
			t.Fatalf("%s/go.mod at the tag must require %s %s and replace nothing:\n%s", m.dir, m.requires, version, gomod)
		}
	}

	// The proxy, as proxy.golang.org would serve the tags: zips made by git archive.
	proxy := filepath.Join(dir, "proxy")
	modproxy := filepath.Join(dir, "modproxy")
	run(t, filepath.Join(clone, "tools", "modproxy"), []string{"GOWORK=off"}, "go", "build", "-o", modproxy, ".")
	run(t, clone, nil, modproxy, append([]string{"-out", proxy, "-version", version, "-tagged"}, published...)...)
	env := userEnv(t, proxy, dir)

	// Each published module at its tag builds on its own: its go.sum holds the hashes of
	// what was tagged (-mod=readonly: a missing or different sum fails). So do the
	// repository's suites (integration), which require zktest at the tag as a user does.
	for _, m := range []string{"kerberos", "cmd/zkr", "otelzk", "zktest", "zktest/docker", "integration"} {
		run(t, filepath.Join(clone, m), append(env, "GOFLAGS=-mod=readonly -modcacherw"), "go", "list", "-deps", "-test", "./...")
	}

	// The user: an empty module, go get, go install, build, run.
	user := filepath.Join(dir, "user")
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, user, env, "go", "mod", "init", "example.com/releaseuser")
	run(t, user, env, "go", "get", prefix+"/otelzk@"+version)
	run(t, user, env, "go", "get", prefix+"/kerberos@"+version)
	run(t, user, env, "go", "get", prefix+"/zktest@"+version)
	run(t, user, env, "go", "install", prefix+"/cmd/zkr@"+version)
	if err := os.WriteFile(filepath.Join(user, "main.go"), []byte(userProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(user, "lock_test.go"), []byte(userTest), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, user, env, "go", "build", "-o", "lockuser", ".")
	run(t, user, env, "go", "test", "-c", "-o", "locktest", ".")
	// zktest alone brings none of the suites' heavy dependencies into the user's build
	// list: not Docker's, not the checkers' or the plots'.
	for _, m := range strings.Fields(run(t, user, env, "go", "list", "-m", "-f", "{{.Path}}", "all")) {
		for _, h := range heavy {
			if m == h || strings.HasPrefix(m, h+"/") {
				t.Fatalf("the user's module graph holds %s, which getting zktest should not bring", m)
			}
		}
	}
	var mod struct {
		Require []struct{ Path, Version string }
		Replace []json.RawMessage
	}
	if err := json.Unmarshal([]byte(run(t, user, env, "go", "mod", "edit", "-json")), &mod); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{prefix, prefix + "/zktest"} {
		if len(mod.Replace) > 0 || !slices.Contains(mod.Require, struct{ Path, Version string }{p, version}) {
			t.Fatalf("the user's go.mod should require %s %s, with no replace: %+v", p, version, mod)
		}
	}

	c := zktest.Start(t)
	servers := c.ConnectString()
	out := run(t, user, []string{"ZK_SERVERS=" + servers}, filepath.Join(user, "lockuser"))
	if !strings.HasPrefix(out, "lock held, fencing token ") {
		t.Fatalf("the user's program printed %q, want the lock held", out)
	}
	ls := run(t, user, nil, filepath.Join(dir, "bin", "zkr"), "ls", "--servers", servers, "/")
	if !slices.Contains(strings.Fields(ls), "release-test") {
		t.Fatalf("the installed zkr's ls / printed %q: no release-test node, which the user's lock made", ls)
	}
	if v := run(t, user, nil, filepath.Join(dir, "bin", "zkr"), "version"); !strings.HasPrefix(v, "zkr "+version+" (zkrecipes "+version+",") {
		t.Fatalf("the installed zkr's version printed %q, want %s of zkr and of its library", v, version)
	}
	// The user's own test: zktest starts its server (the backend this test's environment
	// names), the test takes a lock there.
	out = run(t, user, nil, filepath.Join(user, "locktest"), "-test.count=1", "-test.v", "-test.run", "^TestUserLockOnAServerZktestStarts$")
	if !strings.Contains(out, "--- PASS: TestUserLockOnAServerZktestStarts") || !strings.Contains(out, "lock taken and released") {
		t.Fatalf("the user's test built on zktest did not pass with its lock:\n%s", out)
	}
}

// run runs name in dir with env added to the test's environment, logs it with its time,
// and returns its standard output; a failure ends the test with the command's output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	line := fmt.Sprintf("%s %s", filepath.Base(name), strings.Join(args, " "))
	if err != nil {
		t.Fatalf("%s (in %s): %v\nstdout:\n%s\nstderr:\n%s", line, dir, err, stdout.String(), stderr.String())
	}
	t.Logf("%6.1fs  %s", time.Since(t0).Seconds(), line)
	return stdout.String()
}

// TestAPICheck_FailsWhenAnExportedFunctionIsRemoved shows that scripts/apicheck.sh guards
// the API: against a base that exported one more function it exits non-zero and names the
// function, unless scripts/apicheck-accepted.txt lists that line; against a base that
// exported one fewer (an addition) it passes.
func TestAPICheck_FailsWhenAnExportedFunctionIsRemoved(t *testing.T) {
	dir := t.TempDir()
	clone := cloneAt(t, dir)
	root := repoRoot(t)
	apidiff := filepath.Join(root, "bin", "apidiff")
	if _, err := os.Stat(apidiff); err != nil {
		t.Fatalf("apidiff is missing (scripts/deps.sh installs it): %v", err)
	}
	if err := os.MkdirAll(filepath.Join(clone, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, clone, nil, "cp", apidiff, filepath.Join(clone, "bin", "apidiff"))

	// base: the tree with one more exported function; HEAD: the tree as it is.
	probe := filepath.Join(clone, "apicheck_probe.go")
	src := "package zkrecipes\n\n// APICheckProbe exists only in the base the check compares with.\nfunc APICheckProbe() {}\n"
	if err := os.WriteFile(probe, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, clone, nil, "git", "add", "apicheck_probe.go")
	run(t, clone, gitIdentity, "git", "commit", "-q", "-m", "base: one more exported function")
	run(t, clone, nil, "git", "rm", "-q", "apicheck_probe.go")
	run(t, clone, gitIdentity, "git", "commit", "-q", "-m", "the function removed")

	env := []string{"APICHECK_MODULES=."}
	out, err := runErr(clone, env, "scripts/apicheck.sh", "HEAD~1")
	if err == nil {
		t.Fatalf("apicheck.sh passed on a removed exported function:\n%s", out)
	}
	const line = prefix + ": - APICheckProbe: removed"
	if !strings.Contains(out, line) {
		t.Fatalf("apicheck.sh failed (%v) without the line %q naming the removed function:\n%s", err, line, out)
	}

	// A break listed in apicheck-accepted.txt, as the check printed it, is accepted.
	accepted := filepath.Join(clone, "scripts", "apicheck-accepted.txt")
	f, err := os.OpenFile(accepted, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := runErr(clone, env, "scripts/apicheck.sh", "HEAD~1"); err != nil {
		t.Fatalf("apicheck.sh failed on a removal apicheck-accepted.txt lists: %v\n%s", err, out)
	}
	run(t, clone, nil, "git", "checkout", "-q", "--", "scripts/apicheck-accepted.txt")

	// The other way round the change is an addition: compatible.
	run(t, clone, nil, "git", "checkout", "-q", "HEAD~1")
	if out, err := runErr(clone, env, "scripts/apicheck.sh", "HEAD~1"); err != nil {
		t.Fatalf("apicheck.sh failed on an added function: %v\n%s", err, out)
	}
}

// runErr runs name in dir with env added and returns its combined output and error.
func runErr(dir string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
