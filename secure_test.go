package zkrecipes

import (
	"bytes"
	"context"
	"crypto/tls"
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
