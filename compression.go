package zkrecipes

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Compression of node data, in the format of Curator's
// GzipCompressionProvider (its default CompressionProvider): the data is
// one gzip member (RFC 1952) and nothing else. Curator compresses only
// when the writer asks (create().compressed(), setData().compressed()) and
// decompresses only when the reader asks (getData().decompressed(), a
// cache made with dataIsCompressed); it never looks at the bytes to guess.
// So does zkrecipes: compression is off unless WithCompression turns it on
// for a Session's recipes, or a recipe's own option does.

// WithCompression makes the Session's caches (TreeCache, NodeCache) and
// SharedValues read their data gzip-decompressed, and SharedValues write
// it compressed, in the format of Curator's GzipCompressionProvider: a
// Curator client reads it with getData().decompressed(), and what Curator
// wrote with compressed() reads back here. A recipe's own option
// (WithCacheCompression, WithValueCompression) overrides it. Recipes
// whose format is Curator's uncompressed one (SharedCount, GroupMember,
// the locks...) never compress, nor does discovery, which has its own
// option. Every client of a node must agree: a SharedValue with
// compression on fails on data written without (ErrNotCompressed), and a
// reader with it off sees the gzip bytes. Default off.
func WithCompression(on bool) SessionOption {
	return func(c *sessionConfig) { c.compress = on }
}

// Compression reports whether WithCompression turned compression on for
// the Session's recipes.
func (s *Session) Compression() bool { return s != nil && s.cfg.compress }

// compressionFor is the compression of a recipe of s: its own option
// (own, nil if not given), else the Session's.
func compressionFor(s *Session, own *bool) bool {
	if own != nil {
		return *own
	}
	return s.Compression()
}

// gzipHeader is the header Curator writes: magic, deflate, no flags, no
// time, no extra flags, OS 0. Go's gzip.Writer would write OS 255; any
// header decodes the same on both sides, but equal bytes make a node
// written here indistinguishable from Curator's.
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0}

// gzipEmpty is Curator's compressed form of empty data.
var gzipEmpty = [20]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 3}

// MaxDecompressedSize is the largest data GzipDecompress returns: 64 MiB,
// far above what a ZooKeeper node holds uncompressed in practice (1 MB by
// default), so that a small node cannot make a reader allocate gigabytes.
const MaxDecompressedSize = 64 << 20

// GzipCompress returns data compressed as Curator's
// GzipCompressionProvider.compress does: a single gzip member, with the
// header Curator writes, at deflate's default level. Empty (or nil) data
// gives the 20 bytes Curator writes for it. The result is what to store;
// GzipDecompress (or Curator's getData().decompressed()) reads it back.
func GzipCompress(data []byte) []byte {
	if len(data) == 0 {
		// Go's deflate ends empty input with a stored block; Curator
		// writes (and the JDK makes) an empty fixed block.
		return append([]byte(nil), gzipEmpty[:]...)
	}
	var b bytes.Buffer
	b.Grow(len(gzipHeader) + len(data)/2 + 16)
	b.Write(gzipHeader[:])
	w, _ := flate.NewWriter(&b, flate.DefaultCompression) // only fails for a bad level
	_, _ = w.Write(data)                                  // a bytes.Buffer does not fail
	_ = w.Close()
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc32.ChecksumIEEE(data))
	binary.LittleEndian.PutUint32(trailer[4:], uint32(len(data)))
	b.Write(trailer[:])
	return b.Bytes()
}

// GzipDecompress returns the data that gz, one gzip member as Curator's
// GzipCompressionProvider (or any gzip writer) makes, holds. It fails with
// an error matching ErrNotCompressed when gz is not that: not gzip at all
// (data written uncompressed), truncated, corrupt (a checksum or length
// that does not match), more than one member or trailing bytes (which
// Curator refuses too), or more than MaxDecompressedSize bytes once
// decompressed. It never panics, whatever gz holds.
func GzipDecompress(gz []byte) ([]byte, error) {
	if len(gz) < 2 || gz[0] != 0x1f || gz[1] != 0x8b {
		return nil, &compressedDataError{reason: "no gzip header (the data was written uncompressed?)"}
	}
	src := bytes.NewReader(gz)
	r, err := gzip.NewReader(src)
	if err != nil {
		return nil, &compressedDataError{reason: "bad gzip header", err: err}
	}
	r.Multistream(false)
	out, err := io.ReadAll(io.LimitReader(r, MaxDecompressedSize+1))
	switch {
	case err != nil:
		return nil, &compressedDataError{reason: "corrupt gzip data", err: err}
	case len(out) > MaxDecompressedSize:
		return nil, &compressedDataError{reason: fmt.Sprintf("more than %d bytes once decompressed", MaxDecompressedSize)}
	case src.Len() != 0:
		return nil, &compressedDataError{reason: fmt.Sprintf("%d bytes after the gzip data", src.Len())}
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// encodeData is data as a recipe with compression on stores it.
func encodeData(on bool, data []byte) []byte {
	if !on {
		return data
	}
	return GzipCompress(data)
}

// decodeData is the data of the node at path (as the user names it) as a
// recipe with compression on reads it. It is the hook for any reader of
// node data that takes compression (a Get of the node API, say).
func decodeData(on bool, path string, data []byte) ([]byte, error) {
	if !on {
		return data, nil
	}
	out, err := GzipDecompress(data)
	if err != nil {
		var ce *compressedDataError
		if errors.As(err, &ce) {
			ce.path = path
		}
		return nil, err
	}
	return out, nil
}
