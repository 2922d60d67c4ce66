package zkrecipes

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
)

// The byte strings below are what Curator's ItemSerializer.serialize writes
// (a DataOutputStream: int version 0x00010001; per item byte 0x01, int
// length, bytes; byte 0x02), worked out by hand from its source.
var workItemFrames = []struct {
	name  string
	items [][]byte
	hex   string
}{
	{"one item", [][]byte{[]byte("hello")}, "00010001" + "01" + "00000005" + "68656c6c6f" + "02"},
	{"empty item", [][]byte{{}}, "00010001" + "01" + "00000000" + "02"},
	{"batch of two", [][]byte{[]byte("a"), []byte("bc")}, "00010001" + "01" + "00000001" + "61" + "01" + "00000002" + "6263" + "02"},
	{"empty batch", [][]byte{}, "00010001" + "02"},
}

func TestWorkQueueCodec_EncodesAsCuratorItemSerializer(t *testing.T) {
	for _, tc := range workItemFrames {
		t.Run(tc.name, func(t *testing.T) {
			if got := hex.EncodeToString(encodeWorkItems(tc.items)); got != tc.hex {
				t.Fatalf("encode = %s, want %s", got, tc.hex)
			}
		})
	}
}

func TestWorkQueueCodec_DecodesCuratorFrames(t *testing.T) {
	for _, tc := range workItemFrames {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.hex)
			got, err := decodeWorkItems(b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tc.items, bytes.Equal) {
				t.Fatalf("decode = %q, want %q", got, tc.items)
			}
		})
	}
}

func TestWorkQueueCodec_DecodeIgnoresBytesAfterEnd(t *testing.T) {
	b, _ := hex.DecodeString("00010001" + "01" + "00000001" + "7a" + "02" + "ffff")
	got, err := decodeWorkItems(b)
	if err != nil || len(got) != 1 || string(got[0]) != "z" {
		t.Fatalf("decode = %q, %v; want [z], nil", got, err)
	}
}

func TestWorkQueueCodec_RefusesWhatCuratorRefuses(t *testing.T) {
	for name, h := range map[string]string{
		"nothing":          "",
		"short version":    "000100",
		"wrong version":    "00010002" + "02",
		"no end opcode":    "00010001",
		"unknown opcode":   "00010001" + "03",
		"no length":        "00010001" + "01" + "0000",
		"negative length":  "00010001" + "01" + "ffffffff" + "02",
		"truncated item":   "00010001" + "01" + "00000004" + "6162" + "02",
		"item without end": "00010001" + "01" + "00000001" + "61",
	} {
		t.Run(name, func(t *testing.T) {
			b, _ := hex.DecodeString(h)
			if _, err := decodeWorkItems(b); !errors.Is(err, ErrBadWorkItem) {
				t.Fatalf("decode(%s) = %v, want ErrBadWorkItem", h, err)
			}
		})
	}
}

func TestWorkQueueCodec_RoundTrips(t *testing.T) {
	items := [][]byte{[]byte("x"), {}, bytes.Repeat([]byte{0xff}, 70000)}
	got, err := decodeWorkItems(encodeWorkItems(items))
	if err != nil || !slices.EqualFunc(got, items, bytes.Equal) {
		t.Fatalf("round trip: %v", err)
	}
}
