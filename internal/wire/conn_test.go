package wire

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDialerReadsTheGrantedTimeoutAndPassesBytesThrough(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	l := New()
	dial := l.Dialer(func(string, string, time.Duration) (net.Conn, error) { return client, nil })
	c, err := dial("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	defer c.Close()

	// A ConnectResponse: length, protocolVersion 0, timeOut 4000, session id, password.
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint32(body, 4000)
	body = binary.BigEndian.AppendUint64(body, 0x1234)
	body = binary.BigEndian.AppendUint32(body, 16)
	body = append(body, make([]byte, 16)...)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	go func() {
		// Dribble it out a few bytes at a time, as TCP may.
		for i := 0; i < len(frame); i += 5 {
			_, _ = server.Write(frame[i:min(i+5, len(frame))])
		}
	}()
	got := make([]byte, len(frame))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, frame, got, "bytes pass through unchanged")
	assert.Equal(t, 4*time.Second, l.Granted())
}

// countingConn counts the reads that reach the connection.
type countingConn struct {
	net.Conn
	reads int
}

func (c *countingConn) Read(p []byte) (int, error) { c.reads++; return c.Conn.Read(p) }

func TestConnectionReadsFramesThatArrivedTogetherInOneRead(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	cc := &countingConn{Conn: client}
	dial := New().Dialer(func(string, string, time.Duration) (net.Conn, error) { return cc, nil })
	c, err := dial("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	defer c.Close()

	// Three frames (a reply and two notifications) in one write, read the
	// way go-zookeeper reads them: length, then body.
	var burst []byte
	for i := range 3 {
		body := []byte{byte(i), byte(i), byte(i)}
		burst = append(binary.BigEndian.AppendUint32(burst, uint32(len(body))), body...)
	}
	go func() { _, _ = server.Write(burst) }()
	for i := range 3 {
		var hdr [4]byte
		_, err := io.ReadFull(c, hdr[:])
		require.NoError(t, err)
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		_, err = io.ReadFull(c, body)
		require.NoError(t, err)
		assert.Equal(t, []byte{byte(i), byte(i), byte(i)}, body)
	}
	assert.Equal(t, 1, cc.reads, "one read of the connection for the whole burst")

	// With the buffer empty, a read deadline still applies.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(-time.Second)))
	_, err = c.Read(make([]byte, 4))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
}
