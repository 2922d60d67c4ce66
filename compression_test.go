package zkrecipes

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
)

// curatorEmpty is what Curator's GzipCompressionProvider writes for empty
// data (its COMPRESSED_EMPTY_BYTES, which its own test checks against the
// JDK's GZIPOutputStream).
var curatorEmpty = []byte{31, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}

func TestGzipCompress_EmptyDataIsCuratorsBytes(t *testing.T) {
	for _, in := range [][]byte{nil, {}} {
		if got := GzipCompress(in); !bytes.Equal(got, curatorEmpty) {
			t.Fatalf("GzipCompress(%v) = %v, want Curator's %v", in, got, curatorEmpty)
		}
	}
	out, err := GzipDecompress(curatorEmpty)
	if err != nil || out == nil || len(out) != 0 {
		t.Fatalf("GzipDecompress(Curator's empty) = %v, %v; want 0 bytes (not nil), nil", out, err)
	}
}

func TestGzipCompress_WritesCuratorsHeaderAndRoundTrips(t *testing.T) {
	for _, in := range [][]byte{
		[]byte("Hello, world!"),
		bytes.Repeat([]byte("config=value\n"), 10000),
		{0, 1, 2, 0xff, 0x1f, 0x8b},
	} {
		gz := GzipCompress(in)
		if !bytes.Equal(gz[:10], gzipHeader[:]) {
			t.Fatalf("header %x, want Curator's %x", gz[:10], gzipHeader)
		}
		// Any gzip reader reads it (Curator's decompress is a plain inflate).
		r, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		var std bytes.Buffer
		if _, err := std.ReadFrom(r); err != nil || !bytes.Equal(std.Bytes(), in) {
			t.Fatalf("compress/gzip reads %d bytes, %v; want the %d written", std.Len(), err, len(in))
		}
		out, err := GzipDecompress(gz)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("round trip of %d bytes: %d bytes, %v", len(in), len(out), err)
		}
	}
}

func TestGzipDecompress_ReadsAnyGzipHeader(t *testing.T) {
	// A writer that sets a name, a comment, a time and OS 255 (Go's, or
	// a JDK's with a file name): Curator's reader skips those fields.
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Name, w.Comment = "node", "written by another gzip"
	w.Write([]byte("payload"))
	w.Close()
	out, err := GzipDecompress(b.Bytes())
	if err != nil || string(out) != "payload" {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestGzipDecompress_BadInputIsTypedErrorNeverPanic(t *testing.T) {
	good := GzipCompress([]byte("some data to compress, some data to compress"))
	cases := map[string][]byte{
		"nil":              nil,
		"not gzip":         []byte(`{"json":"written uncompressed"}`),
		"magic only":       {0x1f, 0x8b},
		"zeros":            make([]byte, 100), // Curator's own corrupt-input case
		"truncated":        good[:len(good)-3],
		"bad crc":          append(append([]byte{}, good[:len(good)-8]...), 0, 0, 0, 0, good[len(good)-4], good[len(good)-3], good[len(good)-2], good[len(good)-1]),
		"trailing garbage": append(append([]byte{}, good...), 'x'),
		"two members":      append(append([]byte{}, good...), good...),
	}
	for name, in := range cases {
		out, err := GzipDecompress(in)
		if !errors.Is(err, ErrNotCompressed) || out != nil {
			t.Errorf("%s: got %d bytes, %v; want nil and ErrNotCompressed", name, len(out), err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "zkrecipes: ") {
			t.Errorf("%s: error %q lacks the zkrecipes: prefix", name, err)
		}
	}
	// Every truncation and every one-byte change of a valid member: an
	// error or (for bytes gzip does not check, such as the time) the
	// data; never a panic.
	for i := range good {
		if _, err := GzipDecompress(good[:i]); !errors.Is(err, ErrNotCompressed) {
			t.Fatalf("truncated at %d: %v, want ErrNotCompressed", i, err)
		}
		for d := 1; d < 256; d += 17 {
			c := append([]byte{}, good...)
			c[i] += byte(d)
			if _, err := GzipDecompress(c); err != nil && !errors.Is(err, ErrNotCompressed) {
				t.Fatalf("byte %d changed: untyped error %v", i, err)
			}
		}
	}
}

func TestGzipDecompress_RefusesABomb(t *testing.T) {
	bomb := GzipCompress(make([]byte, MaxDecompressedSize+1))
	if len(bomb) > 200<<10 {
		t.Fatalf("bomb is %d bytes", len(bomb))
	}
	if out, err := GzipDecompress(bomb); !errors.Is(err, ErrNotCompressed) || out != nil {
		t.Fatalf("got %d bytes, %v; want ErrNotCompressed", len(out), err)
	}
}

func TestDecodeData_NamesThePathAndPassesThroughWhenOff(t *testing.T) {
	raw := []byte("plain")
	if out, err := decodeData(false, "/cfg", raw); err != nil || !bytes.Equal(out, raw) {
		t.Fatalf("off: %q, %v", out, err)
	}
	_, err := decodeData(true, "/cfg", raw)
	if !errors.Is(err, ErrNotCompressed) || !strings.Contains(err.Error(), "/cfg") {
		t.Fatalf("on, plain data: %v; want ErrNotCompressed naming /cfg", err)
	}
	if !bytes.Equal(encodeData(false, raw), raw) || !bytes.Equal(encodeData(true, nil), curatorEmpty) {
		t.Fatal("encodeData")
	}
}

func FuzzGzipDecompress(f *testing.F) {
	f.Add(GzipCompress([]byte("seed")))
	f.Add(curatorEmpty)
	f.Add([]byte{0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := GzipDecompress(in)
		if err != nil {
			if !errors.Is(err, ErrNotCompressed) || out != nil {
				t.Fatalf("%v, %d bytes", err, len(out))
			}
			return
		}
		if again, err := GzipDecompress(GzipCompress(out)); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("round trip of decoded data: %v", err)
		}
	})
}
