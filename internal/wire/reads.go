package wire

import (
	"encoding/binary"
	"errors"
)

// The reads ZooKeeper added after go-zookeeper's last protocol update, sent
// as own requests (Layer.Call): their request records and the decoding of
// their replies (ZooKeeper's zookeeper.jute: GetEphemeralsRequest and
// Response, GetAllChildrenNumberRequest and Response, WhoAmIResponse of
// ClientInfo records). A server that does not know an opcode answers
// CodeUnimplemented and closes the connection.

// Opcodes of the own reads.
const (
	OpGetEphemerals        = 103 // 3.6+: the session's ephemeral nodes whose path starts with a prefix
	OpGetAllChildrenNumber = 104 // 3.6+: the number of nodes under a path, at any depth
	OpWhoAmI               = 107 // 3.7+: the identities the session is authenticated as
)

// ErrShortReply is the error of a reply body too short for its record.
var ErrShortReply = errors.New("wire: reply shorter than its record")

// PathBody is the record of a request that holds one path (a ustring):
// GetEphemeralsRequest and GetAllChildrenNumberRequest.
func PathBody(path string) []byte {
	b := make([]byte, 4+len(path))
	binary.BigEndian.PutUint32(b, uint32(len(path)))
	copy(b[4:], path)
	return b
}

// reader reads jute's big-endian records from a reply body.
type reader struct {
	b   []byte
	err error
}

func (r *reader) int32() int32 {
	if r.err != nil || len(r.b) < 4 {
		r.err = ErrShortReply
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.b))
	r.b = r.b[4:]
	return v
}

// str reads a ustring (a length, -1 for null, then UTF-8 bytes).
func (r *reader) str() string {
	n := r.int32()
	if r.err != nil || n < 0 {
		return ""
	}
	if int(n) > len(r.b) {
		r.err = ErrShortReply
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// count reads a vector's length (-1 for null: none), refusing one the
// remaining body cannot hold (each element takes at least min bytes).
func (r *reader) count(min int) int {
	n := r.int32()
	if r.err != nil || n < 0 {
		return 0
	}
	if int(n) > len(r.b)/min {
		r.err = ErrShortReply
		return 0
	}
	return int(n)
}

// DecodeStrings decodes a vector of ustrings: GetEphemeralsResponse.
func DecodeStrings(body []byte) ([]string, error) {
	r := &reader{b: body}
	out := make([]string, r.count(4))
	for i := range out {
		out[i] = r.str()
	}
	return out, r.err
}

// DecodeInt decodes a record of one int: GetAllChildrenNumberResponse.
func DecodeInt(body []byte) (int32, error) {
	r := &reader{b: body}
	v := r.int32()
	return v, r.err
}

// ClientInfo is one identity of a WhoAmIResponse.
type ClientInfo struct {
	Scheme string // authScheme
	User   string
}

// DecodeClientInfos decodes a WhoAmIResponse: a vector of ClientInfo.
func DecodeClientInfos(body []byte) ([]ClientInfo, error) {
	r := &reader{b: body}
	out := make([]ClientInfo, r.count(8))
	for i := range out {
		out[i] = ClientInfo{Scheme: r.str(), User: r.str()}
	}
	return out, r.err
}
