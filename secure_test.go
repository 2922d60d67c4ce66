package zkrecipes

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecureOptionsRefuseNil(t *testing.T) {
	_, err := Connect(context.Background(), []string{"127.0.0.1:1"}, WithSASL(nil))
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = Connect(context.Background(), []string{"127.0.0.1:1"}, WithTLS(nil))
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestWithTLSCopiesTheConfig(t *testing.T) {
	cfg := &tls.Config{ServerName: "a"}
	c, err := buildConfig([]SessionOption{WithTLS(cfg)})
	require.NoError(t, err)
	cfg.ServerName = "b"
	require.Equal(t, "a", c.tls.ServerName)
}

func TestSASLFramesAreZooKeepersGetSASLRequestAndSetSASLResponse(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, writeSASLRequest(&b, 7, []byte("tok")))
	require.Equal(t, []byte{0, 0, 0, 15, 0, 0, 0, 7, 0, 0, 0, 102, 0, 0, 0, 3, 't', 'o', 'k'}, b.Bytes())

	reply := func(body ...byte) *bytes.Reader {
		hdr := []byte{0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x85} // xid 7, zxid 0, err -123
		frame := append([]byte{0, 0, 0, byte(len(hdr) + len(body))}, hdr...)
		return bytes.NewReader(append(frame, body...))
	}
	xid, code, tok, body, err := readSASLReply(reply(0, 0, 0, 2, 'h', 'i'))
	require.NoError(t, err)
	require.Equal(t, int32(7), xid)
	require.Equal(t, int32(-123), code)
	require.True(t, body)
	require.Equal(t, "hi", string(tok))
	_, _, tok, body, err = readSASLReply(reply(0xff, 0xff, 0xff, 0xff)) // null token
	require.NoError(t, err)
	require.True(t, body)
	require.Nil(t, tok)
	_, _, _, body, err = readSASLReply(reply()) // -124 comes with no body
	require.NoError(t, err)
	require.False(t, body)
	_, _, _, _, err = readSASLReply(reply(0, 0, 0, 9, 'x'))
	require.Error(t, err)
}

func TestTLSFailuresAreClassified(t *testing.T) {
	require.ErrorIs(t, tlsFailure(&tls.CertificateVerificationError{Err: errors.New("x")}), ErrTLSUntrusted)
	require.ErrorIs(t, tlsFailure(&net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}), ErrTLSRefused)
	require.NoError(t, tlsFailure(&net.OpError{Op: "dial", Err: errors.New("connection refused")}))
	e := &tlsError{ErrTLSRefused, errors.New("zkrecipes: tls handshake with h: remote error")}
	require.ErrorIs(t, e, ErrTLSRefused)
	require.Contains(t, e.Error(), "remote error")
}

// chunkConn reads its bytes a few at a time.
type chunkConn struct {
	net.Conn
	b []byte
	n int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	k := min(c.n, len(p), len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

func TestRequiredWatchSeesErr124OnTheFirstReplyAcrossReadBoundaries(t *testing.T) {
	connectResponse := func(session byte) []byte {
		body := []byte{0, 0, 0, 0, 0, 0, 0x0f, 0xa0, 0, 0, 0, 0, 0, 0, 0, session, 0, 0, 0, 16}
		body = append(body, make([]byte, 16)...)
		body = append(body, 0) // readOnly
		return append([]byte{0, 0, 0, byte(len(body))}, body...)
	}
	reply := func(code int32) []byte {
		b := []byte{0, 0, 0, 16, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[16:], uint32(code))
		return b
	}
	for _, tc := range []struct {
		name   string
		stream []byte
		fatal  bool
	}{
		{"-124", append(connectResponse(1), reply(-124)...), true},
		{"ok", append(connectResponse(1), reply(0)...), false},
		{"expired", append(connectResponse(0), reply(-124)...), false},
	} {
		for _, chunk := range []int{1, 3, 7, 100} {
			var got error
			c := &watchConn{Conn: &chunkConn{b: tc.stream, n: chunk}, refuse: func(_ string, err error) { got = err }}
			buf := make([]byte, 64)
			for range len(tc.stream) {
				if _, err := c.Read(buf); err != nil {
					t.Fatal(err)
				}
			}
			if tc.fatal {
				require.ErrorIs(t, got, ErrSASLRequired, "%s, chunks of %d", tc.name, chunk)
			} else {
				require.NoError(t, got, "%s, chunks of %d", tc.name, chunk)
			}
			require.True(t, c.done)
		}
	}
}

// A request's -124 on a Connect Session is ErrSASLRequired and charges no
// server: the connection's watchConn charged the server that refused, and
// by the time the request's goroutine sees the error go-zookeeper may be
// on another one.
func TestSASLRequiredOfARequestChargesNoServerOnConnectsSession(t *testing.T) {
	s := newSession(defaultSessionConfig())
	s.servers = newServerList([]string{"a:1", "b:1"}, s.cfg.log, s.closedCh)
	require.NoError(t, s.servers.Init([]string{"a:1", "b:1"}))
	err := s.saslRequired(errors.New("zk: unknown error: -124"))
	require.ErrorIs(t, err, ErrSASLRequired)
	require.False(t, s.fatal.fired())
	require.Empty(t, s.servers.reasons, "no server charged")
	require.NoError(t, s.saslRequired(nil))
}
