package kerberos

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"
	"github.com/zkrecipes/zkrecipes"
)

// These tests need no KDC: they check configuration handling and the
// security-layer step against tokens made here with a known key. The whole
// exchange against a real KDC and ZooKeeper is in integration/kerberos.

const testKrb5Conf = `[libdefaults]
  default_realm = EXAMPLE.TEST
[realms]
  EXAMPLE.TEST = {
    kdc = 127.0.0.1:88
  }
`

func writeConf(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(p, []byte(testKrb5Conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNew_UnusableConfigurationIsErrConfig(t *testing.T) {
	conf := writeConf(t)
	missing := filepath.Join(t.TempDir(), "missing")
	for name, opts := range map[string][]Option{
		"no krb5.conf":           {WithConfigFile(missing), WithKeytab("alice", missing)},
		"keytab missing":         {WithConfigFile(conf), WithKeytab("alice", missing)},
		"keytab without user":    {WithConfigFile(conf), WithKeytab("", conf)},
		"no credential cache":    {WithConfigFile(conf), WithCredentialCache(missing)},
		"service name has slash": {WithConfigFile(conf), WithServiceName("zoo/keeper")},
		"service host has at":    {WithConfigFile(conf), WithServiceHost("a@b")},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := New(opts...)
			if !errors.Is(err, ErrConfig) || m != nil {
				t.Fatalf("New: %v, %v; want ErrConfig", m, err)
			}
		})
	}
}

func TestServicePrincipal_DefaultsToZookeeperAtTheDialledHost(t *testing.T) {
	ctx := context.Background()
	m := &Mechanism{cfg: mechConfig{serviceName: "zookeeper"}}
	for server, want := range map[string]string{
		"zk1.example.test:2181": "zookeeper/zk1.example.test",
		"127.0.0.1:2181":        "zookeeper/127.0.0.1",
		"[::1]:2181":            "zookeeper/::1",
	} {
		got, err := m.ServicePrincipal(ctx, server)
		if err != nil || got != want {
			t.Errorf("ServicePrincipal(%q) = %q, %v; want %q", server, got, err, want)
		}
	}
	m.cfg.serviceName, m.cfg.serviceHost = "zk", "shared.example.test"
	if got, _ := m.ServicePrincipal(ctx, "zk1.example.test:2181"); got != "zk/shared.example.test" {
		t.Errorf("with service name and host: %q", got)
	}
}

func TestErrors_CredentialErrorsMatchErrAuthFailed(t *testing.T) {
	for _, err := range []error{ErrLogin, ErrServiceTicket, ErrMutualAuth, ErrProtocol} {
		if !errors.Is(err, zkrecipes.ErrAuthFailed) {
			t.Errorf("%v does not match zkrecipes.ErrAuthFailed: the Session would redial forever", err)
		}
	}
	for _, err := range []error{ErrKDCUnreachable, ErrConfig} {
		if errors.Is(err, zkrecipes.ErrAuthFailed) {
			t.Errorf("%v matches zkrecipes.ErrAuthFailed", err)
		}
	}
}

// testKey is an aes256 key, as the test KDC hands out.
func testKey(t *testing.T) types.EncryptionKey {
	t.Helper()
	et, err := crypto.GetEtype(etypeID.AES256_CTS_HMAC_SHA1_96)
	if err != nil {
		t.Fatal(err)
	}
	k := make([]byte, et.GetKeyByteSize())
	for i := range k {
		k[i] = byte(i)
	}
	return types.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: k}
}

// acceptorOffer is the server's security-layer offer, as the JDK wraps it.
func acceptorOffer(t *testing.T, key types.EncryptionKey, offer []byte) []byte {
	t.Helper()
	et, _ := crypto.GetEtype(key.KeyType)
	wt := gssapi.WrapToken{Flags: wrapSentByAcceptor, EC: uint16(et.GetHMACBitLength() / 8), SndSeqNum: 7, Payload: offer}
	if err := wt.SetCheckSum(key, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		t.Fatal(err)
	}
	b, err := wt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStep_OfferAnsweredWithNoLayerAndTheAuthzid(t *testing.T) {
	key := testKey(t)
	c := &gssClient{key: key, authzid: "alice@EXAMPLE.TEST", step: 1, auth: types.Authenticator{SeqNumber: 42}}
	resp, last, err := c.Step(context.Background(), acceptorOffer(t, key, []byte{0x07, 0x01, 0x00, 0x00}))
	if err != nil || !last {
		t.Fatalf("Step: last=%v err=%v", last, err)
	}
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(resp, false); err != nil {
		t.Fatal(err)
	}
	if ok, err := wt.Verify(key, keyusage.GSSAPI_INITIATOR_SEAL); !ok {
		t.Fatalf("answer does not verify with the initiator's key usage: %v", err)
	}
	if want := "\x01\x00\x00\x00alice@EXAMPLE.TEST"; string(wt.Payload) != want {
		t.Fatalf("payload %q, want %q", wt.Payload, want)
	}
	if wt.SndSeqNum != 42 {
		t.Fatalf("sequence number %d, want the authenticator's 42", wt.SndSeqNum)
	}
}

func TestStep_BadOfferIsErrProtocol(t *testing.T) {
	key := testKey(t)
	other := testKey(t)
	other.KeyValue[0] ^= 0xff
	tampered := acceptorOffer(t, key, []byte{0x01, 0, 0, 0})
	tampered[gssapi.HdrLen] = 0x07
	for name, tok := range map[string][]byte{
		"integrity layer required": acceptorOffer(t, key, []byte{0x02, 0x01, 0x00, 0x00}),
		"tampered":                 tampered,
		"another key":              acceptorOffer(t, other, []byte{0x01, 0, 0, 0}),
		"empty":                    {},
		"wrong length":             acceptorOffer(t, key, []byte{0x01, 0, 0}),
	} {
		t.Run(name, func(t *testing.T) {
			c := &gssClient{key: key, authzid: "alice@EXAMPLE.TEST", step: 1}
			_, _, err := c.Step(context.Background(), tok)
			if !errors.Is(err, ErrProtocol) || !errors.Is(err, zkrecipes.ErrAuthFailed) {
				t.Fatalf("Step: %v; want ErrProtocol", err)
			}
		})
	}
}

func TestStep_MissingOrBadAPRepIsErrMutualAuth(t *testing.T) {
	for name, tok := range map[string][]byte{
		"none":                nil,
		"malformed GSS token": {0x60, 0x03, 0x01, 0x02, 0x03},
	} {
		t.Run(name, func(t *testing.T) {
			c := &gssClient{key: testKey(t), spn: "zookeeper/localhost"}
			_, _, err := c.Step(context.Background(), tok)
			if !errors.Is(err, ErrMutualAuth) {
				t.Fatalf("Step: %v; want ErrMutualAuth", err)
			}
		})
	}
}

func TestUnrotate_UndoesRightRotation(t *testing.T) {
	hdr := []byte{0x05, 0x04, 0x01, 0xff, 0, 12, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1}
	body := []byte("payloadCHECKSUM12345")
	rotated := append(append([]byte{}, hdr...), append(body[len(body)-3:], body[:len(body)-3]...)...)
	got := unrotate(rotated)
	if string(got[gssapi.HdrLen:]) != string(body) || got[6] != 0 || got[7] != 0 {
		t.Fatalf("unrotate: %q", got)
	}
}

// No KDC answering is not a credential problem: ErrKDCUnreachable, which
// does not match zkrecipes.ErrAuthFailed, so a Session keeps redialling.
func TestStart_NoKDCIsErrKDCUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // a loopback port nobody listens on
	conf := filepath.Join(t.TempDir(), "krb5.conf")
	body := strings.Replace(testKrb5Conf, "127.0.0.1:88", addr, 1) + "[libdefaults]\n  udp_preference_limit = 1\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	kt := keytab.New()
	if err := kt.AddEntry("alice", "EXAMPLE.TEST", "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	ktb, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ktPath := filepath.Join(t.TempDir(), "alice.keytab")
	if err := os.WriteFile(ktPath, ktb, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := New(WithConfigFile(conf), WithKeytab("alice", ktPath))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, _, err = m.Start(context.Background(), "localhost:2181")
	if !errors.Is(err, ErrKDCUnreachable) || errors.Is(err, zkrecipes.ErrAuthFailed) {
		t.Fatalf("Start: %v; want ErrKDCUnreachable only", err)
	}
}

// A DIGEST-MD5 server answers the AP-REQ with its challenge: the server
// speaks another mechanism.
func TestStep_DigestChallengeIsErrSASLMechanism(t *testing.T) {
	c := &gssClient{key: testKey(t), spn: "zookeeper/localhost"}
	_, _, err := c.Step(context.Background(), []byte(`realm="zk-sasl-md5",nonce="abc",charset=utf-8,algorithm=md5-sess`))
	if !errors.Is(err, zkrecipes.ErrSASLMechanism) {
		t.Fatalf("Step: %v; want zkrecipes.ErrSASLMechanism", err)
	}
}
