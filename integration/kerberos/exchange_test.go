package kerberos_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/kerberos"
)

// These tests drive the mechanism over a bare ZooKeeper connection (the
// frames of ZooKeeper's jute protocol, written here), so that what the server
// sees is only the mechanism's tokens: they check the exchange itself, and
// that the server then knows the connection by the client's principal.

// rawConn is one ZooKeeper client connection, driven by hand.
type rawConn struct {
	c   net.Conn
	xid int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(15*time.Second)))
	r := &rawConn{c: c}
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId,
	// passwd (16 zero bytes), readOnly.
	req := make([]byte, 0, 45)
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 10000)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 16)
	req = append(req, make([]byte, 16)...)
	req = append(req, 0)
	require.NoError(t, r.write(req))
	resp, err := r.read()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(resp), 20, "ConnectResponse")
	require.NotZero(t, binary.BigEndian.Uint64(resp[8:16]), "session id")
	return r
}

func (r *rawConn) write(body []byte) error {
	_, err := r.c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	if err == nil {
		_, err = r.c.Write(body)
	}
	return err
}

func (r *rawConn) read() ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r.c, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r.c, b)
	return b, err
}

// request sends one request and returns the reply's error code and body.
func (r *rawConn) request(op int32, body []byte) (int32, []byte, error) {
	r.xid++
	req := binary.BigEndian.AppendUint32(nil, uint32(r.xid))
	req = binary.BigEndian.AppendUint32(req, uint32(op))
	if err := r.write(append(req, body...)); err != nil {
		return 0, nil, err
	}
	resp, err := r.read()
	if err != nil {
		return 0, nil, err
	}
	if len(resp) < 16 {
		return 0, nil, fmt.Errorf("short reply of %d bytes", len(resp))
	}
	return int32(binary.BigEndian.Uint32(resp[12:16])), resp[16:], nil
}

const (
	opSASL   = 102
	opWhoAmI = 107
)

// sasl runs m's exchange on the connection as the core's SASL layer does:
// tokens as GetSASLRequest, replies' tokens to Step.
func (r *rawConn) sasl(ctx context.Context, m zr.SASLMechanism, server string) error {
	cl, tok, err := m.Start(ctx, server)
	if err != nil {
		return err
	}
	for {
		code, body, err := r.request(opSASL, buffer(tok))
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("server error %d", code)
		}
		challenge := unbuffer(body)
		resp, last, err := cl.Step(ctx, challenge)
		if err != nil {
			return err
		}
		if last {
			if resp == nil {
				return nil
			}
			code, body, err := r.request(opSASL, buffer(resp))
			if err != nil {
				return err
			}
			if code != 0 || unbuffer(body) != nil {
				return fmt.Errorf("final reply: error %d, token %x", code, unbuffer(body))
			}
			return nil
		}
		tok = resp
	}
}

func buffer(b []byte) []byte {
	if b == nil {
		return binary.BigEndian.AppendUint32(nil, 0xffffffff)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func unbuffer(b []byte) []byte {
	if len(b) < 4 {
		return nil
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n < 0 || int(n) > len(b)-4 {
		return nil
	}
	return b[4 : 4+n]
}

// whoAmI returns the connection's ids as "scheme:id".
func (r *rawConn) whoAmI() ([]string, error) {
	code, body, err := r.request(opWhoAmI, nil)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("whoAmI: error %d", code)
	}
	var ids []string
	n := int(binary.BigEndian.Uint32(body))
	body = body[4:]
	for range n {
		s := unbuffer(body)
		body = body[4+len(s):]
		u := unbuffer(body)
		body = body[4+len(u):]
		ids = append(ids, string(s)+":"+string(u))
	}
	return ids, nil
}

func TestGSSAPIExchange_ServerNamesTheClientPrincipal(t *testing.T) {
	k, srv := setup(t)
	m, err := kerberos.New(kerberos.WithConfigFile(k.ConfigPath),
		kerberos.WithKeytab("alice", k.Keytab("alice")), kerberos.WithServiceHost("localhost"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := dialRaw(t, srv.Addr)
	require.NoError(t, r.sasl(ctx, m, srv.Addr))
	ids, err := r.whoAmI()
	require.NoError(t, err)
	t.Logf("ids after GSSAPI: %v", ids)
	require.Contains(t, ids, "sasl:alice@"+zktestRealm)
}

func TestGSSAPIExchange_CanonicalHostnameFindsLocalhost(t *testing.T) {
	k, srv := setup(t)
	m, err := kerberos.New(kerberos.WithConfigFile(k.ConfigPath),
		kerberos.WithKeytab("bob", k.Keytab("bob")), kerberos.WithCanonicalHostname())
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addr := srv.Addr
	spn, err := m.ServicePrincipal(ctx, addr)
	require.NoError(t, err)
	require.Equal(t, "zookeeper/localhost", spn, "127.0.0.1 canonicalizes to localhost (/etc/hosts)")
	r := dialRaw(t, addr)
	require.NoError(t, r.sasl(ctx, m, addr))
	ids, err := r.whoAmI()
	require.NoError(t, err)
	require.Contains(t, ids, "sasl:bob@"+zktestRealm)
}

func TestGSSAPIExchange_WrongServiceHostIsAuthFailed(t *testing.T) {
	k, srv := setup(t)
	// The dialled host as given: zookeeper/127.0.0.1 does not exist.
	m, err := kerberos.New(kerberos.WithConfigFile(k.ConfigPath), kerberos.WithKeytab("alice", k.Keytab("alice")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err = m.Start(ctx, srv.Addr)
	require.ErrorIs(t, err, kerberos.ErrServiceTicket)
	require.ErrorIs(t, err, zr.ErrAuthFailed)
}
