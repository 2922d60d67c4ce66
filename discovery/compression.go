package discovery

import (
	"bytes"
	"fmt"

	zr "github.com/zkrecipes/zkrecipes"
)

// Option configures New.
type Option func(*ServiceDiscovery)

// WithCompression makes the ServiceDiscovery register its instances
// with their JSON gzip-compressed, in the format of Curator's
// GzipCompressionProvider, for instances whose payload is large. Curator's
// ServiceDiscovery cannot read compressed instances (it has no such
// option): turn it on only when every reader is a ServiceDiscovery of this
// package with compression on, or reads the nodes with Curator's
// getData().decompressed().
//
// With compression on, instances are read either way: a node whose data
// starts with gzip's magic bytes is decompressed (corrupt data is a bad
// instance: ErrBadInstance, also matching zkrecipes.ErrNotCompressed), and one holding plain JSON, as
// Curator and uncompressed registrants write it, is read as it is (JSON
// never starts with those bytes). So registrants can turn compression on
// one at a time. The Session's WithCompression does not apply to
// discovery. Default off.
func WithCompression(on bool) Option {
	return func(d *ServiceDiscovery) { d.compress = on }
}

// gzipMagic starts every gzip member.
var gzipMagic = []byte{0x1f, 0x8b}

// marshal is inst as registered: JSON, compressed when compression is on.
func (d *ServiceDiscovery) marshal(inst Instance) ([]byte, error) {
	data, err := inst.Marshal()
	if err != nil || !d.compress {
		return data, err
	}
	return zr.GzipCompress(data), nil
}

// unmarshal reads an instance's data: decompressed first when
// compression is on and the data is gzip.
func (d *ServiceDiscovery) unmarshal(data []byte) (Instance, error) {
	if d.compress && bytes.HasPrefix(data, gzipMagic) {
		var err error
		if data, err = zr.GzipDecompress(data); err != nil {
			return Instance{}, fmt.Errorf("%w: %w", ErrBadInstance, err)
		}
	}
	return Unmarshal(data)
}
