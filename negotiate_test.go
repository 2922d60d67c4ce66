package zkrecipes

import (
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNegotiatingDialerReadsTheGrantedTimeoutAndPassesBytesThrough(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	var granted atomic.Int64
	dial := negotiatingDialer(func(string, string, time.Duration) (net.Conn, error) { return client, nil }, &granted)
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
	assert.Equal(t, int64(4000), granted.Load())
}
