package discovery

import (
	"bytes"
	"errors"
	"testing"

	zr "github.com/zkrecipes/zkrecipes"
)

func TestCompression_RegistersGzipAndReadsBothForms(t *testing.T) {
	inst := Instance{Name: "api", ID: "a", Address: "127.0.0.1", Port: 8080}
	plainJSON, err := inst.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	on, off := &ServiceDiscovery{compress: true}, &ServiceDiscovery{}
	gz, err := on.marshal(inst)
	if err != nil || !bytes.Equal(gz, zr.GzipCompress(plainJSON)) {
		t.Fatalf("marshal with compression: %x, %v", gz, err)
	}
	if b, _ := off.marshal(inst); !bytes.Equal(b, plainJSON) {
		t.Fatal("marshal without compression is the JSON")
	}
	for name, data := range map[string][]byte{"gzip": gz, "plain JSON": plainJSON} {
		got, err := on.unmarshal(data)
		if err != nil || got.ID != "a" || got.Port != 8080 {
			t.Errorf("%s read with compression on: %+v, %v", name, got, err)
		}
	}
	if _, err := off.unmarshal(gz); !errors.Is(err, ErrBadInstance) {
		t.Errorf("gzip read with compression off: %v, want ErrBadInstance", err)
	}
	_, err = on.unmarshal(gz[:len(gz)-5])
	if !errors.Is(err, ErrBadInstance) || !errors.Is(err, zr.ErrNotCompressed) {
		t.Errorf("truncated gzip: %v, want ErrBadInstance and ErrNotCompressed", err)
	}
	if d := New(&zr.Session{}, "/s", nil); !errors.Is(d.err, zr.ErrInvalidArgument) {
		t.Errorf("nil Option: %v, want ErrInvalidArgument", d.err)
	}
}
