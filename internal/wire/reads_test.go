package wire

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func juteStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func TestPathBodyIsALengthPrefixedString(t *testing.T) {
	assert.Equal(t, []byte{0, 0, 0, 4, '/', 'a', '/', 'b'}, PathBody("/a/b"))
}

func TestOwnReadRepliesDecode(t *testing.T) {
	b := binary.BigEndian.AppendUint32(nil, 2)
	b = juteStr(juteStr(b, "/a/e1"), "/a/e2")
	got, err := DecodeStrings(b)
	require.NoError(t, err)
	assert.Equal(t, []string{"/a/e1", "/a/e2"}, got)

	n, err := DecodeInt([]byte{0, 0, 1, 2})
	require.NoError(t, err)
	assert.Equal(t, int32(258), n)

	b = binary.BigEndian.AppendUint32(nil, 1)
	b = juteStr(juteStr(b, "digest"), "alice")
	ids, err := DecodeClientInfos(b)
	require.NoError(t, err)
	assert.Equal(t, []ClientInfo{{Scheme: "digest", User: "alice"}}, ids)

	none, err := DecodeStrings([]byte{0xff, 0xff, 0xff, 0xff}) // a null vector
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestOwnReadRepliesCutShortFailWithoutPanicOrHugeAllocation(t *testing.T) {
	for name, body := range map[string][]byte{
		"empty":               nil,
		"count past the end":  {0x7f, 0xff, 0xff, 0xff},
		"string past the end": juteStr(binary.BigEndian.AppendUint32(nil, 1), "/abc")[:9],
	} {
		_, err := DecodeStrings(body)
		assert.ErrorIs(t, err, ErrShortReply, name)
		_, err = DecodeClientInfos(body)
		assert.ErrorIs(t, err, ErrShortReply, name)
	}
	_, err := DecodeInt([]byte{1})
	assert.ErrorIs(t, err, ErrShortReply)
}
