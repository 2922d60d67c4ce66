package discovery

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// Written by curator-x-discovery 5.4.0's JsonInstanceSerializer (the
// Debian jar): the default (compatible) mode with a Map payload, the
// non-compatible mode (with "enabled"), a String payload, no payload.
const (
	javaMapDefault = `{"name":"api","id":"id-1","address":"10.0.0.5","port":8080,"sslPort":null,"payload":{"@class":"java.util.LinkedHashMap","zone":"eu-1","version":"2"},"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true},{"value":"/v1","variable":false}]}}`
	javaMapEnabled = `{"name":"api","id":"id-1","address":"10.0.0.5","port":8080,"sslPort":null,"payload":{"@class":"java.util.LinkedHashMap","zone":"eu-1","version":"2"},"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true},{"value":"/v1","variable":false}]},"enabled":true}`
	javaString     = `{"name":"api","id":"id-2","address":"h","port":null,"sslPort":8443,"payload":"hello","registrationTimeUTC":5,"serviceType":"STATIC","uriSpec":null}`
	javaNoPayload  = `{"name":"api","id":"id-3","address":"h","port":null,"sslPort":null,"payload":null,"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":null}`
)

func TestUnmarshal_ReadsWhatCuratorWrites(t *testing.T) {
	for _, src := range []string{javaMapDefault, javaMapEnabled} {
		i, err := Unmarshal([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if i.Name != "api" || i.ID != "id-1" || i.Address != "10.0.0.5" || i.Port != 8080 || i.SSLPort != 0 ||
			i.Type != Dynamic || i.Disabled || !i.RegistrationTime.Equal(time.UnixMilli(1700000000000)) {
			t.Errorf("fields: %+v", i)
		}
		if i.PayloadClass != "java.util.LinkedHashMap" {
			t.Errorf("payload class %q", i.PayloadClass)
		}
		var m map[string]string
		if err := json.Unmarshal(i.Payload, &m); err != nil || m["zone"] != "eu-1" || m["version"] != "2" || len(m) != 2 {
			t.Errorf("payload %s (%v)", i.Payload, err)
		}
		if i.URISpec != "{scheme}://{address}:{port}/v1" {
			t.Errorf("uri spec %q", i.URISpec)
		}
		if u, _ := i.URI(nil); u != "http://10.0.0.5:8080/v1" {
			t.Errorf("uri %q", u)
		}
	}
	i, err := Unmarshal([]byte(javaString))
	if err != nil || string(i.Payload) != `"hello"` || i.PayloadClass != "" || i.SSLPort != 8443 || i.Port != 0 || i.Type != Static {
		t.Errorf("string payload: %+v %v", i, err)
	}
	i, err = Unmarshal([]byte(javaNoPayload))
	if err != nil || i.Payload != nil || i.URISpec != "" {
		t.Errorf("no payload: %+v %v", i, err)
	}
}

func TestUnmarshal_EnabledFalseAndUnknownFieldsAndUntypedPayload(t *testing.T) {
	i, err := Unmarshal([]byte(`{"name":"a","id":"b","payload":{"k":"v"},"enabled":false,"somethingNew":[1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !i.Disabled || string(i.Payload) != `{"k":"v"}` || i.PayloadClass != "" {
		t.Errorf("%+v", i)
	}
}

func TestUnmarshal_RejectsWhatIsNotAnInstance(t *testing.T) {
	for _, src := range []string{"", "null", "{}", `{"name":"a"}`, `{"id":"a"}`, "[1]", `{"name":"a","id":"b","port":"x"}`,
		`{"name":"a","id":"b","payload":{"@class":5}}`, "\xff"} {
		if _, err := Unmarshal([]byte(src)); !errors.Is(err, ErrBadInstance) {
			t.Errorf("%q: %v", src, err)
		}
	}
}

func TestMarshal_WritesCuratorsDefaultForm(t *testing.T) {
	i := Instance{Name: "api", ID: "id-1", Address: "10.0.0.5", Port: 8080,
		Payload: json.RawMessage(`{"zone":"eu-1","version":"2"}`), RegistrationTime: time.UnixMilli(1700000000000),
		URISpec: "{scheme}://{address}:{port}/v1"}
	b, err := i.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != javaMapDefault {
		t.Errorf("got  %s\nwant %s", b, javaMapDefault)
	}
	s := Instance{Name: "api", ID: "id-2", Address: "h", SSLPort: 8443, Payload: json.RawMessage(`"hello"`),
		RegistrationTime: time.UnixMilli(5), Type: Static}
	if b, _ := s.Marshal(); string(b) != javaString {
		t.Errorf("got  %s\nwant %s", b, javaString)
	}
	n := Instance{Name: "api", ID: "id-3", Address: "h", RegistrationTime: time.UnixMilli(5)}
	if b, _ := n.Marshal(); string(b) != javaNoPayload {
		t.Errorf("got  %s\nwant %s", b, javaNoPayload)
	}
}

func TestMarshal_RoundTrips(t *testing.T) {
	in := Instance{Name: "n", ID: "i", Address: "a", Port: 1, SSLPort: 2, Payload: json.RawMessage(`{"x":1}`),
		PayloadClass: "com.example.Details", RegistrationTime: time.UnixMilli(42).UTC(), Type: DynamicSequential,
		URISpec: "https://{address}:{ssl-port}{[}x{]}", Disabled: true}
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Payload) != `{"x":1}` || out.PayloadClass != in.PayloadClass || out.Name != in.Name || out.Port != 1 ||
		out.SSLPort != 2 || !out.RegistrationTime.Equal(in.RegistrationTime) || out.Type != in.Type || out.URISpec != in.URISpec || !out.Disabled {
		t.Errorf("in  %+v\nout %+v", in, out)
	}
	if u, _ := out.URI(nil); u != "https://a:2{x}" {
		t.Errorf("uri %q", u)
	}
}

func TestMarshal_RejectsWhatCannotBeWritten(t *testing.T) {
	for _, i := range []Instance{{ID: "x"}, {Name: "x"}, {Name: "a", ID: "b", Payload: json.RawMessage("{")},
		{Name: "a", ID: "b", URISpec: "{open"}, {Name: "a", ID: "b", URISpec: "close}"}, {Name: "a", ID: "b", URISpec: "{a{b}}"}} {
		if _, err := i.Marshal(); !errors.Is(err, ErrBadInstance) {
			t.Errorf("%+v: %v", i, err)
		}
	}
	for _, typ := range []ServiceType{"dynamic", "EPHEMERAL", " STATIC", "X"} {
		if _, err := (Instance{Name: "a", ID: "b", Type: typ}).Marshal(); !errors.Is(err, ErrBadType) || !errors.Is(err, ErrBadInstance) {
			t.Errorf("type %q: %v", typ, err)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{javaMapDefault, javaMapEnabled, javaString, javaNoPayload} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i, err := Unmarshal(b)
		if err != nil {
			return
		}
		if _, err := i.Marshal(); err != nil && !errors.Is(err, ErrBadInstance) {
			t.Fatal(err)
		}
	})
}
