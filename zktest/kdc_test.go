package zktest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// kinit logs in as principal with keytab against k, as MIT's own client does.
func kinit(t *testing.T, k *KDC, principal, keytab string) error {
	t.Helper()
	bin, err := exec.LookPath("kinit")
	if err != nil {
		if inCI() {
			t.Fatal("kinit not installed (krb5-user; scripts/deps.sh installs it)")
		}
		t.Skip("kinit not installed (krb5-user)")
	}
	cmd := exec.Command(bin, "-k", "-t", keytab, "-c", "FILE:"+filepath.Join(t.TempDir(), "ccache"), principal+"@"+KDCRealm)
	cmd.Env = append(os.Environ(), "KRB5_CONFIG="+k.ConfigPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("kinit %s: %v: %s", principal, err, out)
	}
	return err
}

// The KDC's keytabs log in with MIT's kinit, and a rotated key makes an
// older copy of the keytab useless; NewKDC's Close removes its directory.
func TestKDC_KeytabsLogInAndRekeyInvalidatesOldCopies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k, err := NewKDC(ctx)
	if err != nil {
		if inCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer k.Close()
	keytab, err := k.AddPrincipal(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := kinit(t, k, "alice", keytab); err != nil {
		t.Fatal("a fresh keytab does not log in")
	}
	if err := kinit(t, k, KDCServicePrincipal, k.Keytab(KDCServicePrincipal)); err != nil {
		t.Fatal("the service principal's keytab does not log in")
	}
	old := filepath.Join(t.TempDir(), "old.keytab")
	b, err := os.ReadFile(keytab)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Rekey(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := kinit(t, k, "alice", old); err == nil {
		t.Fatal("a keytab from before Rekey still logs in")
	}
	if err := kinit(t, k, "alice", k.Keytab("alice")); err != nil {
		t.Fatal("the rekeyed keytab does not log in")
	}
	dir := k.top
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s: %v", dir, err)
	}
}
