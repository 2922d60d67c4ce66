package zkrecipes

import (
	"encoding/binary"
	"fmt"
)

// The item encoding of Curator's DistributedQueue family (ItemSerializer in
// curator-recipes, queue/ItemSerializer.java): every queue node holds a
// batch ("MultiItem") of one or more items, framed with Java's
// DataOutputStream, big-endian:
//
//	int32 version 0x00010001
//	per item: byte 0x01, int32 length, length bytes
//	byte 0x02
//
// A reader checks the version and each opcode, and refuses a negative
// length; bytes after the end opcode are ignored, as Curator's reader
// ignores them.
const (
	workItemVersion = 0x00010001
	workItemOpcode  = 0x01
	workItemEOF     = 0x02
)

// encodeWorkItems frames items as one queue node's data.
func encodeWorkItems(items [][]byte) []byte {
	n := 4 + 1
	for _, it := range items {
		n += 1 + 4 + len(it)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, workItemVersion)
	for _, it := range items {
		b = append(b, workItemOpcode)
		b = binary.BigEndian.AppendUint32(b, uint32(len(it)))
		b = append(b, it...)
	}
	return append(b, workItemEOF)
}

// decodeWorkItems reads a queue node's data. It fails with an error
// matching ErrBadWorkItem when the data is not in Curator's framing.
func decodeWorkItems(b []byte) ([][]byte, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadWorkItem, fmt.Sprintf(format, args...))
	}
	if len(b) < 4 {
		return nil, bad("%d bytes, no version", len(b))
	}
	if v := binary.BigEndian.Uint32(b); v != workItemVersion {
		return nil, bad("version %#x, want %#x", v, workItemVersion)
	}
	b = b[4:]
	items := [][]byte{}
	for {
		if len(b) == 0 {
			return nil, bad("no end opcode")
		}
		op := b[0]
		b = b[1:]
		switch {
		case op == workItemEOF:
			return items, nil
		case op != workItemOpcode:
			return nil, bad("opcode %d, want %d or %d", op, workItemOpcode, workItemEOF)
		case len(b) < 4:
			return nil, bad("item %d: no length", len(items))
		}
		size := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if size < 0 || int(size) > len(b) {
			return nil, bad("item %d: length %d, %d bytes left", len(items), size, len(b))
		}
		items = append(items, append([]byte{}, b[:size]...))
		b = b[size:]
	}
}
