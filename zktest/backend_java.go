package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const debianZooKeeperJar = "/usr/share/java/zookeeper.jar"

// javaBackend runs each server as a local JVM.
type javaBackend struct {
	java      string
	classpath string
	version   string // "" (Debian's 3.8, or the jars of ZK_CLASSPATH / ZOOKEEPER_HOME) or Version39
}

func (b *javaBackend) name() string { return BackendJava }

// newJavaBackend finds a java binary and ZooKeeper's jars, or says what is missing.
func newJavaBackend() (*javaBackend, error) {
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	cp, err := findClasspath()
	if err != nil {
		return nil, err
	}
	return &javaBackend{java: java, classpath: cp}, nil
}

// newJavaBackendVersion is newJavaBackend for ZooKeeper version v (Version39):
// its jars from ZK39_HOME or the repository's .deps/zookeeper-3.9, ahead of
// Debian's zookeeper.jar's dependencies.
func newJavaBackendVersion(v string) (*javaBackend, error) {
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	dir, err := findVersionDir(v)
	if err != nil {
		return nil, err
	}
	// zookeeper-jute.jar first: zookeeper.jar's manifest names Debian's
	// /usr/share/java/zookeeper-jute.jar (3.8 on Debian 12), which the JVM puts
	// right behind zookeeper.jar, and 3.8's wire records would shadow 3.9's
	// (the server then fails every handshake: NoSuchMethodError on
	// ConnectRequest.setReadOnly).
	cp := []string{filepath.Join(dir, "zookeeper-jute.jar"), filepath.Join(dir, "zookeeper.jar")}
	for _, b := range []string{"/usr/share/java/slf4j-simple.jar", "/usr/share/java/slf4j-nop.jar"} {
		if _, err := os.Stat(b); err == nil {
			cp = append(cp, b)
			break
		}
	}
	return &javaBackend{java: java, classpath: strings.Join(cp, string(os.PathListSeparator)), version: v}, nil
}

// findVersionDir finds the directory of ZooKeeper v's jars: ZK39_HOME, else
// .deps/zookeeper-<v> in the repository this package's source is in, or in
// the working directory or one of its parents.
func findVersionDir(v string) (string, error) {
	has := func(d string) bool {
		for _, j := range []string{"zookeeper.jar", "zookeeper-jute.jar"} {
			if _, err := os.Stat(filepath.Join(d, j)); err != nil {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("ZK39_HOME"); d != "" {
		if !has(d) {
			return "", fmt.Errorf("zktest: ZK39_HOME=%s holds no zookeeper.jar and zookeeper-jute.jar", d)
		}
		return d, nil
	}
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, d := range starts {
		for {
			if c := filepath.Join(d, ".deps", "zookeeper-"+v); has(c) {
				return c, nil
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	return "", unavailable("java backend: no ZooKeeper %s jars (ZK39_HOME unset, no .deps/zookeeper-%s in the repository); run scripts/deps.sh", v, v)
}

func findJava() (string, error) {
	if j := os.Getenv("ZK_JAVA"); j != "" {
		if _, err := os.Stat(j); err != nil {
			return "", fmt.Errorf("zktest: ZK_JAVA=%s: %w", j, err)
		}
		return j, nil
	}
	if h := os.Getenv("JAVA_HOME"); h != "" {
		j := filepath.Join(h, "bin", "java")
		if _, err := os.Stat(j); err == nil {
			return j, nil
		}
	}
	j, err := exec.LookPath("java")
	if err != nil {
		return "", unavailable("java backend: no java in ZK_JAVA, JAVA_HOME or PATH")
	}
	return j, nil
}

func findClasspath() (string, error) {
	if cp := os.Getenv("ZK_CLASSPATH"); cp != "" {
		return cp, nil
	}
	if h := os.Getenv("ZOOKEEPER_HOME"); h != "" {
		var jars []string
		for _, pat := range []string{filepath.Join(h, "lib", "*.jar"), filepath.Join(h, "*.jar")} {
			m, _ := filepath.Glob(pat)
			jars = append(jars, m...)
		}
		if len(jars) == 0 {
			return "", fmt.Errorf("zktest: ZOOKEEPER_HOME=%s holds no jars in lib/ or at its root", h)
		}
		// A distribution's conf/ carries its logging configuration.
		if fi, err := os.Stat(filepath.Join(h, "conf")); err == nil && fi.IsDir() {
			jars = append(jars, filepath.Join(h, "conf"))
		}
		return strings.Join(jars, string(os.PathListSeparator)), nil
	}
	if _, err := os.Stat(debianZooKeeperJar); err != nil {
		return "", unavailable("java backend: no ZooKeeper jars (ZK_CLASSPATH, ZOOKEEPER_HOME unset and %s missing)", debianZooKeeperJar)
	}
	// zookeeper.jar's manifest Class-Path names its dependencies; add a logging binding.
	cp := []string{debianZooKeeperJar}
	for _, b := range []string{"/usr/share/java/slf4j-simple.jar", "/usr/share/java/slf4j-nop.jar"} {
		if _, err := os.Stat(b); err == nil {
			cp = append(cp, b)
			break
		}
	}
	return strings.Join(cp, string(os.PathListSeparator)), nil
}

func (b *javaBackend) launch(ctx context.Context, dir string, specs []serverSpec, cfg config) ([]member, error) {
	var ms []member
	fail := func(err error) ([]member, error) {
		for _, m := range ms {
			_ = m.close()
		}
		return nil, err
	}
	jvmFlags := testJVMFlags
	if cfg.jvmFlags != nil {
		jvmFlags = cfg.jvmFlags
	}
	for i, s := range specs {
		sdir := filepath.Join(dir, fmt.Sprintf("server%d", s.id))
		data := filepath.Join(sdir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.id)+"\n"), 0o644); err != nil {
			return fail(err)
		}
		zc := zooCfg(specs, i, data, cfg.tickTime) + cfg.extendedTypesCfg()
		if cfg.reconfig {
			dynPath := filepath.Join(sdir, "zoo.cfg.dynamic")
			var dyn string
			zc, dyn = reconfigCfg(specs, cfg.size, i, data, dynPath, cfg.tickTime)
			zc += cfg.extendedTypesCfg()
			if err := os.WriteFile(dynPath, []byte(dyn), 0o644); err != nil {
				return fail(err)
			}
		}
		var secFlags []string
		cp := b.classpath
		if cfg.secure != nil {
			extra, flags, err := cfg.secure.serverSetup(sdir, cfg.secure.pkiDir, s.tlsPort)
			if err != nil {
				return fail(err)
			}
			zc += strings.Join(extra, "\n") + "\n"
			secFlags, cp = flags, secureClasspath(cp)
		}
		cfgPath := filepath.Join(sdir, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(zc), 0o644); err != nil {
			return fail(err)
		}
		m := &javaServer{
			address: s.addr(),
			logPath: filepath.Join(sdir, "server.log"),
			logw:    cfg.logWriter,
			args: append(append(slices.Clone(jvmFlags), secFlags...), []string{
				"-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
				"-Dzookeeper.log.dir=" + sdir,
				"-Dzookeeper.admin.enableServer=false",
				"-Dorg.slf4j.simpleLogger.showDateTime=true",
				"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
				"-cp", cp,
				"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath,
			}...),
			java: b.java,
			dir:  sdir,
		}
		ms = append(ms, m)
		if i >= cfg.size {
			continue // a spare (WithReconfig): Cluster.Restart starts it
		}
		if err := m.start(ctx); err != nil {
			return fail(err)
		}
	}
	return ms, nil
}

// javaServer is one JVM running QuorumPeerMain.
type javaServer struct {
	address string
	java    string
	args    []string
	dir     string
	logPath string
	logw    io.Writer

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has been waited for
	closed bool
}

func (s *javaServer) addr() string { return s.address }

func (s *javaServer) start(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("zktest: server closed")
	}
	if s.done != nil {
		select {
		case <-s.done:
		default:
			return fmt.Errorf("zktest: server %s is already running", s.address)
		}
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.java, s.args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = serverProcAttr()
	var out io.Writer = logf
	if s.logw != nil {
		out = io.MultiWriter(logf, s.logw)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("zktest: starting %s: %w", s.java, err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(done)
	}()
	return nil
}

// signal sends sig to the running process; it fails when none runs.
func (s *javaServer) signal(sig syscall.Signal) (<-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil, fmt.Errorf("zktest: server %s was never started", s.address)
	}
	select {
	case <-s.done:
		return s.done, fmt.Errorf("zktest: server %s is not running", s.address)
	default:
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return s.done, err
	}
	return s.done, nil
}

func (s *javaServer) kill() error {
	done, err := s.signal(syscall.SIGKILL)
	if err != nil {
		return err
	}
	<-done
	return nil
}

// stop freezes the server and returns once every thread of it is stopped:
// a thread running on another CPU stops a moment after the signal, and a
// server that answered after Stop returned would not be frozen yet.
func (s *javaServer) stop() error {
	if _, err := s.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if allStopped(pid) {
			return nil
		}
		time.Sleep(time.Millisecond) // polls /proc; orders nothing
	}
	return fmt.Errorf("zktest: server %s not stopped 5 s after SIGSTOP", s.address)
}

// allStopped reports whether every thread of process pid is stopped, as
// /proc tells; true where there is no /proc to tell.
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) == 0 || !strings.Contains("TtZX", f[0]) { // stopped, or ending
			return false
		}
	}
	return true
}
func (s *javaServer) cont() error { _, err := s.signal(syscall.SIGCONT); return err }

func (s *javaServer) exited() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func (s *javaServer) logTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	return tailLines(string(b), n)
}

func (s *javaServer) close() error {
	s.mu.Lock()
	s.closed = true
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	// SIGKILL also ends a process stopped with SIGSTOP.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	return nil
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
