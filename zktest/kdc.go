package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// KDCRealm is the Kerberos realm of every [KDC] this package starts.
const KDCRealm = "ZKTEST.LOCAL"

// KDCServicePrincipal is the service principal (without realm) the servers that
// [WithKerberos] configures hold: clients dialling 127.0.0.1 ask for it with
// service host "localhost" (or canonicalize 127.0.0.1 to localhost, as Java does).
const KDCServicePrincipal = "zookeeper/localhost"

// KDC is a throw-away MIT Kerberos KDC (Debian's krb5-kdc) on 127.0.0.1, with its
// own realm [KDCRealm], database and configuration in a fresh directory; nothing in
// /etc is read or written. It holds the principal [KDCServicePrincipal] from the
// start; add clients with [KDC.AddPrincipal]. Methods are safe for concurrent use.
type KDC struct {
	// Dir holds the database, the keytabs and the configuration files.
	Dir string
	// ConfigPath is the client krb5.conf: the realm, and the KDC's address
	// (TCP). Give it to clients (KRB5_CONFIG, kerberos.WithConfigFile).
	ConfigPath string
	// Addr is the KDC's "127.0.0.1:port" (UDP and TCP).
	Addr string

	env   []string
	tools kdcTools
	mu    sync.Mutex // serializes kadmin.local on the database
	cmd   *exec.Cmd
	done  chan struct{}
	top   string // removed by Close when not ""
	close sync.Once
}

type kdcTools struct{ kdb5Util, kadminLocal, krb5kdc string }

func findKDCTools() (kdcTools, error) {
	find := func(name string) (string, error) {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
			p := filepath.Join(d, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return "", fmt.Errorf("%w: %s not found (apt-get install krb5-kdc krb5-admin-server krb5-user, or run scripts/deps.sh)", ErrNoKerberos, name)
	}
	var t kdcTools
	var err error
	if t.kdb5Util, err = find("kdb5_util"); err != nil {
		return t, err
	}
	if t.kadminLocal, err = find("kadmin.local"); err != nil {
		return t, err
	}
	t.krb5kdc, err = find("krb5kdc")
	return t, err
}

// StartKDC starts a KDC for the test; tb.Cleanup stops it. When the MIT KDC is not
// installed it calls tb.Skip with what to install, or tb.Fatalf when the
// environment variable CI is set. Call it from the test goroutine only.
func StartKDC(tb testing.TB) *KDC {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k, err := newKDC(ctx, tb.TempDir(), false)
	if err != nil {
		if errors.Is(err, ErrNoKerberos) && !inCI() {
			tb.Skipf("%v", err)
		}
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			if b, err := os.ReadFile(filepath.Join(k.Dir, "kdc.log")); err == nil {
				tb.Logf("zktest: KDC log:\n%s", tailLines(string(b), 30))
			}
		}
		if err := k.Close(); err != nil {
			tb.Errorf("zktest: closing KDC: %v", err)
		}
	})
	return k
}

// NewKDC starts a KDC for use outside tests, in a fresh temporary directory that
// Close removes. It fails with an error matching [ErrNoKerberos] when the MIT KDC
// is not installed. The caller must call [KDC.Close]; on Linux the KDC also dies
// with the process that started it.
func NewKDC(ctx context.Context) (*KDC, error) {
	dir, err := os.MkdirTemp("", "zktest-kdc-")
	if err != nil {
		return nil, err
	}
	k, err := newKDC(ctx, dir, true)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return k, nil
}

func newKDC(ctx context.Context, dir string, own bool) (*KDC, error) {
	tools, err := findKDCTools()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		sub := filepath.Join(dir, fmt.Sprintf("kdc%d", attempt))
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return nil, err
		}
		k := &KDC{Dir: sub, tools: tools}
		if own {
			k.top = dir
		}
		if lastErr = k.start(ctx); lastErr == nil {
			return k, nil
		}
		k.stopProcess()
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func (k *KDC) start(ctx context.Context) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	k.Addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	k.ConfigPath = filepath.Join(k.Dir, "krb5.conf")
	kdcConf := filepath.Join(k.Dir, "kdc.conf")
	// Clients talk TCP only (udp_preference_limit = 1): the port was picked
	// free for TCP. No reverse DNS (rdns), no DNS lookups of realms or KDCs.
	krb5 := fmt.Sprintf(`[libdefaults]
  default_realm = %[1]s
  dns_lookup_realm = false
  dns_lookup_kdc = false
  rdns = false
  dns_canonicalize_hostname = false
  udp_preference_limit = 1
  ticket_lifetime = 1h
  renew_lifetime = 2h
  default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
  default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
  permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
[realms]
  %[1]s = {
    kdc = %[2]s
  }
[domain_realm]
  localhost = %[1]s
  .localhost = %[1]s
`, KDCRealm, k.Addr)
	kdc := fmt.Sprintf(`[kdcdefaults]
  kdc_listen = %[2]s
  kdc_tcp_listen = %[2]s
[realms]
  %[1]s = {
    database_name = %[3]s/principal
    key_stash_file = %[3]s/stash
    acl_file = %[3]s/kadm5.acl
    max_life = 1h
    max_renewable_life = 2h
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    kdc_listen = %[2]s
    kdc_tcp_listen = %[2]s
  }
[logging]
  kdc = FILE:%[3]s/kdc.log
  default = FILE:%[3]s/kdc.log
`, KDCRealm, k.Addr, k.Dir)
	for name, body := range map[string]string{"krb5.conf": krb5, "kdc.conf": kdc, "kadm5.acl": ""} {
		if err := os.WriteFile(filepath.Join(k.Dir, name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.ConfigPath, "KRB5_KDC_PROFILE="+kdcConf)
	if err := k.run(ctx, k.tools.kdb5Util, "create", "-s", "-r", KDCRealm, "-P", "zktest-master-key"); err != nil {
		return err
	}
	if _, err := k.AddPrincipal(ctx, KDCServicePrincipal); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(k.Dir, "krb5kdc.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(k.tools.krb5kdc, "-n", "-r", KDCRealm)
	cmd.Env = k.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("zktest: starting krb5kdc: %w", err)
	}
	done := make(chan struct{})
	k.cmd, k.done = cmd, done
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(done)
	}()
	// Serving once its TCP port accepts (it binds the port before it serves).
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", k.Addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-done:
			out, _ := os.ReadFile(filepath.Join(k.Dir, "krb5kdc.out"))
			log, _ := os.ReadFile(filepath.Join(k.Dir, "kdc.log"))
			return fmt.Errorf("zktest: krb5kdc exited at start: %s%s", tailLines(string(out), 10), tailLines(string(log), 10))
		case <-ctx.Done():
			return fmt.Errorf("zktest: krb5kdc not serving on %s: %w", k.Addr, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polls the port; orders nothing
		}
	}
}

// AddPrincipal creates principal name (without realm: "alice", "zookeeper/host")
// with a random key, and returns the path of a keytab holding its keys, in Dir.
// Adding it again gives it a new key, which makes older keytabs of it stale.
func (k *KDC) AddPrincipal(ctx context.Context, name string) (keytab string, err error) {
	if name == "" || strings.ContainsAny(name, "@ \t\n\"'") {
		return "", fmt.Errorf("zktest: bad principal name %q", name)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	full := name + "@" + KDCRealm
	if err := k.run(ctx, k.tools.kadminLocal, "-r", KDCRealm, "-q", "addprinc -randkey "+full); err != nil {
		return "", err
	}
	keytab = k.Keytab(name)
	_ = os.Remove(keytab)
	if err := k.run(ctx, k.tools.kadminLocal, "-r", KDCRealm, "-q", "ktadd -k "+keytab+" -norandkey "+full); err != nil {
		return "", err
	}
	if _, err := os.Stat(keytab); err != nil {
		return "", fmt.Errorf("zktest: kadmin.local wrote no keytab for %s: %w", full, err)
	}
	return keytab, nil
}

// Rekey gives principal name (without realm) a new random key, as a key
// rotation does, and rewrites its keytab (see [KDC.Keytab]) with the new key only:
// a copy of the old keytab no longer logs in.
func (k *KDC) Rekey(ctx context.Context, name string) (keytab string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	full := name + "@" + KDCRealm
	if err := k.run(ctx, k.tools.kadminLocal, "-r", KDCRealm, "-q", "cpw -randkey "+full); err != nil {
		return "", err
	}
	keytab = k.Keytab(name)
	_ = os.Remove(keytab)
	if err := k.run(ctx, k.tools.kadminLocal, "-r", KDCRealm, "-q", "ktadd -k "+keytab+" -norandkey "+full); err != nil {
		return "", err
	}
	return keytab, nil
}

// Keytab returns the path of the keytab AddPrincipal wrote for name.
func (k *KDC) Keytab(name string) string {
	return filepath.Join(k.Dir, strings.ReplaceAll(name, "/", "_")+".keytab")
}

// run runs one of the KDC's admin tools against this KDC's configuration.
func (k *KDC) run(ctx context.Context, tool string, args ...string) error {
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = k.env
	cmd.Dir = k.Dir
	out, err := cmd.CombinedOutput()
	// kadmin.local reports a failed query on its output, with exit status 0.
	if err == nil && strings.Contains(string(out), "kadmin.local: ") && !strings.Contains(string(out), "already exists") {
		err = errors.New("kadmin.local reported an error")
	}
	if err != nil {
		return fmt.Errorf("zktest: %s %s: %w: %s", filepath.Base(tool), strings.Join(args, " "), err, tailLines(string(out), 10))
	}
	return nil
}

// Close stops the KDC and, for a KDC from NewKDC, removes its directory.
func (k *KDC) Close() error {
	k.close.Do(func() {
		k.stopProcess()
		if k.top != "" {
			_ = os.RemoveAll(k.top)
		}
	})
	return nil
}

func (k *KDC) stopProcess() {
	if k.cmd == nil {
		return
	}
	_ = k.cmd.Process.Kill()
	<-k.done
}

// WithKerberos makes a [SecureServer] authenticate SASL clients with GSSAPI
// against kdc, as [KDCServicePrincipal]@[KDCRealm] (its JAAS "Server" section,
// in place of DIGEST-MD5 users): a client principal alice then holds the id
// sasl:alice@ZKTEST.LOCAL. Add [WithSASLEnforced] to require it. Optional, for
// [StartSecure]; without it the server's SASL is DIGEST-MD5 (WithSASLUsers) or none.
func WithKerberos(kdc *KDC) SecureOption {
	return func(c *secureConfig) {
		c.jaas = fmt.Sprintf(`Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="%s"
  storeKey=true
  useTicketCache=false
  isInitiator=false
  principal="%s@%s";
};
`, kdc.Keytab(KDCServicePrincipal), KDCServicePrincipal, KDCRealm)
		c.jvmFlags = append(c.jvmFlags, "-Djava.security.krb5.conf="+kdc.ConfigPath)
	}
}
