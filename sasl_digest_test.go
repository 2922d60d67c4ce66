package zkrecipes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// RFC 2831 §4's example (with its published errata values: the RFC's
// printed response was computed for another digest-uri).
func TestDigestMD5MatchesRFC2831Example(t *testing.T) {
	ha1 := digestHA1("chris", "elwood.innosoft.com", "secret", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk")
	require.Equal(t, "d388dad90d4bbd760a152321f2143af7",
		digestKD(ha1, "OA6MG9tEQGm2hh", "00000001", "OA6MHXh6VqTrRk", "auth", "AUTHENTICATE:imap/elwood.innosoft.com"))
	require.Equal(t, "ea40f60335c427b5527b84dbabcdfffd",
		digestKD(ha1, "OA6MG9tEQGm2hh", "00000001", "OA6MHXh6VqTrRk", "auth", ":imap/elwood.innosoft.com"))
}

// An exchange a ZooKeeper 3.8.0 server accepted (alice/alice-secret),
// recorded on the wire.
func TestDigestMD5AnswersZooKeeperAsRecordedOnTheWire(t *testing.T) {
	challenge := `realm="zk-sasl-md5",nonce="39hZ2OPw2HMNMBYUhEScY9EVFCOrvkq1fJa/6U90",charset=utf-8,algorithm=md5-sess`
	resp, rspauth, err := digestResponse("alice", "alice-secret", "42391097389067844", []byte(challenge))
	require.NoError(t, err)
	d, err := parseDirectives(resp)
	require.NoError(t, err)
	require.Equal(t, []string{"be81b366c4ba281db4cbaf364836a5fc"}, d["response"])
	require.Equal(t, []string{"zookeeper/zk-sasl-md5"}, d["digest-uri"])
	require.Equal(t, []string{"zk-sasl-md5"}, d["realm"])
	require.Equal(t, []string{"auth"}, d["qop"])
	require.Equal(t, []string{"00000001"}, d["nc"])
	require.Equal(t, "f6eee91918c96afbbbe64040179abb93", rspauth)
}

func TestDigestMD5VerifiesRspauth(t *testing.T) {
	ctx := context.Background()
	c, first, err := DigestMD5("alice", "alice-secret").Start(ctx, "127.0.0.1:2181")
	require.NoError(t, err)
	require.NotNil(t, first)
	require.Empty(t, first, "DIGEST-MD5 has no initial response")
	dc := c.(*digestClient)
	dc.cnonce = "42391097389067844"
	_, last, err := c.Step(ctx, []byte(`realm="zk-sasl-md5",nonce="39hZ2OPw2HMNMBYUhEScY9EVFCOrvkq1fJa/6U90",charset=utf-8,algorithm=md5-sess`))
	require.NoError(t, err)
	require.False(t, last)

	// A wrong rspauth: the server does not know the password.
	bad := *dc
	_, _, err = bad.Step(ctx, []byte("rspauth=00000000000000000000000000000000"))
	require.ErrorIs(t, err, ErrAuthFailed)
	bad = *dc
	_, _, err = bad.Step(ctx, []byte(""))
	require.ErrorIs(t, err, ErrAuthFailed)

	resp, last, err := c.Step(ctx, []byte("rspauth=f6eee91918c96afbbbe64040179abb93"))
	require.NoError(t, err)
	require.True(t, last)
	require.Nil(t, resp)
}

func TestDigestMD5RejectsAChallengeOfAnotherMechanism(t *testing.T) {
	for _, ch := range []string{
		"\x60\x82\x02\xcf\x06\x09", // a GSSAPI token
		`realm="x",algorithm=md5-sess`,
		`nonce="abc",algorithm=md5`,
		`nonce="abc`,
	} {
		_, _, err := digestResponse("alice", "pw", "c", []byte(ch))
		require.True(t, errors.Is(err, ErrSASLMechanism), "%q: %v", ch, err)
		require.ErrorIs(t, err, ErrAuthFailed, "ErrSASLMechanism matches ErrAuthFailed")
	}
}

func TestDigestMD5ParsesQuotedDirectives(t *testing.T) {
	d, err := parseDirectives([]byte(` realm="a\"b,c" , realm=r2,nonce="n" ,qop="auth,auth-int",maxbuf=65536`))
	require.NoError(t, err)
	require.Equal(t, []string{`a"b,c`, "r2"}, d["realm"])
	require.Equal(t, []string{"auth,auth-int"}, d["qop"])
	require.Equal(t, []string{"65536"}, d["maxbuf"])
}

func TestDigestMD5EncodesLatin1WithoutUTF8Charset(t *testing.T) {
	r1, _, err := digestResponse("jörg", "pw", "c", []byte(`nonce="n",algorithm=md5-sess`))
	require.NoError(t, err)
	r2, _, err := digestResponse("jörg", "pw", "c", []byte(`nonce="n",algorithm=md5-sess,charset=utf-8`))
	require.NoError(t, err)
	require.NotEqual(t, strings.Split(string(r1), "response=")[1], strings.Split(string(r2), "response=")[1])
	_, _, err = digestResponse("日本", "pw", "c", []byte(`nonce="n",algorithm=md5-sess`))
	require.ErrorIs(t, err, ErrAuthFailed)
}
