package peers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// The peers' sources travel inside the package, so the build does not depend on
// the working directory and the cache key is exactly what gets built.
//
//go:embed java/*.java kazoo_peer.py gozk/*.go
var sources embed.FS

// curatorJars are the jars the Curator peer compiles and runs against; their
// manifests' Class-Path entries pull in the rest (guava, jackson, netty, jute...).
var curatorJars = []string{
	"curator-recipes.jar",
	"curator-x-discovery.jar", // and its jackson jars, by its manifest
	"curator-framework.jar",
	"curator-client.jar",
	"zookeeper.jar",
	"zookeeper-jute.jar",
	"guava.jar",
	"slf4j-api.jar",
	"slf4j-nop.jar", // silences ZooKeeper's and Curator's logging
}

// curatorMainClass is the Curator peer's entry point.
const curatorMainClass = "zkrecipes.peers.CuratorPeer"

// javaLibDir is where the jars live: /usr/share/java (Debian's libcurator-*,
// libzookeeper-java, libslf4j-java), or $ZKRECIPES_JAVA_LIB.
func javaLibDir() string {
	if d := os.Getenv("ZKRECIPES_JAVA_LIB"); d != "" {
		return d
	}
	return "/usr/share/java"
}

// pythonPath is the interpreter that has kazoo: Debian's /usr/bin/python3
// (python3-kazoo), not whatever python3 comes first on PATH, or $ZKRECIPES_PYTHON.
func pythonPath() string {
	if p := os.Getenv("ZKRECIPES_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

func jarClasspath() string {
	dir := javaLibDir()
	parts := make([]string, len(curatorJars))
	for i, j := range curatorJars {
		parts[i] = filepath.Join(dir, j)
	}
	return strings.Join(parts, string(os.PathListSeparator))
}

// cacheRoot is os.UserCacheDir()/zkrecipes-peers.
func cacheRoot() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "zkrecipes-peers"), nil
}

// hashSources hashes the embedded files matching glob plus extra strings.
func hashSources(glob string, extra ...string) (string, error) {
	names, err := fs.Glob(sources, glob)
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := sources.ReadFile(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	for _, e := range extra {
		fmt.Fprintf(h, "extra %d\n%s", len(e), e)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

var (
	javaOnce sync.Once
	javaCP   string
	javaErr  error
)

// BuildJava compiles the Curator peer once per process into
// os.UserCacheDir()/zkrecipes-peers/java-<hash of sources, javac version and
// classpath> (reused across runs while that hash holds) and returns the
// classpath to run it with.
func BuildJava(ctx context.Context) (classpath string, err error) {
	javaOnce.Do(func() { javaCP, javaErr = buildJava(ctx) })
	return javaCP, javaErr
}

func buildJava(ctx context.Context) (string, error) {
	if err := Available(Curator); err != nil {
		return "", err
	}
	ver, err := exec.CommandContext(ctx, "javac", "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("javac -version: %v: %s", err, ver)
	}
	jars := jarClasspath()
	key, err := hashSources("java/*.java", string(ver), jars)
	if err != nil {
		return "", err
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	final := filepath.Join(root, "java-"+key)
	cp := final + string(os.PathListSeparator) + jars
	if _, err := os.Stat(filepath.Join(final, "ok")); err == nil {
		return cp, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, "build-java-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	classes := filepath.Join(tmp, "classes")
	names, err := writeEmbedded(src, "java/*.java")
	if err != nil {
		return "", err
	}
	args := append([]string{"-nowarn", "-encoding", "UTF-8", "-d", classes, "-cp", jars}, names...)
	if out, err := exec.CommandContext(ctx, "javac", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(classes, "ok"), nil, 0o644); err != nil {
		return "", err
	}
	// Another test binary may have won the race; its result is as good as ours.
	if err := os.Rename(classes, final); err != nil {
		if _, statErr := os.Stat(filepath.Join(final, "ok")); statErr != nil {
			return "", err
		}
	}
	return cp, nil
}

var (
	gozkOnce sync.Once
	gozkBin  string
	gozkErr  error
)

// buildGozk builds the go-zookeeper peer with the go tool, once per process,
// cached like the Java peer and keyed by its sources, go.mod, go.sum and the Go version.
func buildGozk(ctx context.Context) (string, error) {
	gozkOnce.Do(func() { gozkBin, gozkErr = buildGozkOnce(ctx) })
	return gozkBin, gozkErr
}

func buildGozkOnce(ctx context.Context) (string, error) {
	dir, err := packageDir()
	if err != nil {
		return "", err
	}
	modDir := filepath.Dir(dir) // the integration module
	var extra []string
	for _, f := range []string{"go.mod", "go.sum", "../go.mod", "../go.sum"} {
		b, _ := os.ReadFile(filepath.Join(modDir, f))
		extra = append(extra, string(b))
	}
	// The peer links the zkrecipes library from the root module: its
	// sources are part of the key.
	lib, _ := filepath.Glob(filepath.Join(modDir, "..", "*.go"))
	sort.Strings(lib)
	for _, f := range lib {
		b, _ := os.ReadFile(f)
		extra = append(extra, f, string(b))
	}
	ver, err := exec.CommandContext(ctx, "go", "version").Output()
	if err != nil {
		return "", fmt.Errorf("go version: %v", err)
	}
	extra = append(extra, string(ver))
	key, err := hashSources("gozk/*.go", extra...)
	if err != nil {
		return "", err
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	final := filepath.Join(root, "gozk-"+key)
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(root, "build-gozk-")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp.Name(), "./peers/gozk")
	cmd.Dir = modDir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./peers/gozk: %v\n%s", err, out.String())
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	return final, nil
}

// kazooScript writes the embedded kazoo peer to the cache and returns its path.
func kazooScript() (string, error) {
	key, err := hashSources("kazoo_peer.py")
	if err != nil {
		return "", err
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	final := filepath.Join(root, "kazoo-"+key, "kazoo_peer.py")
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, "build-kazoo-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if _, err := writeEmbedded(tmp, "kazoo_peer.py"); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Dir(final)); err != nil {
		if _, statErr := os.Stat(final); statErr != nil {
			return "", err
		}
	}
	return final, nil
}

// writeEmbedded copies the embedded files matching glob into dir (flat) and returns their paths.
func writeEmbedded(dir, glob string) ([]string, error) {
	names, err := fs.Glob(sources, glob)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no embedded files match %s", glob)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		b, err := sources.ReadFile(n)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, filepath.Base(n))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// packageDir is the source directory of this package (needed only to build the
// gozk peer inside the integration module).
func packageDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("peers: cannot locate the package source directory")
	}
	dir := filepath.Dir(file)
	if _, err := os.Stat(filepath.Join(dir, "gozk", "main.go")); err != nil {
		return "", fmt.Errorf("peers: sources not found next to %s: %v", file, err)
	}
	return dir, nil
}
