package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ServiceType is how an instance is registered, as Curator's ServiceType.
type ServiceType string

const (
	// Dynamic instances are ephemeral nodes: they go when their process
	// does. The default.
	Dynamic ServiceType = "DYNAMIC"
	// DynamicSequential instances are ephemeral sequential nodes.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
	// Static instances are persistent nodes.
	Static ServiceType = "STATIC"
	// Permanent instances are persistent nodes.
	Permanent ServiceType = "PERMANENT"
)

// valid reports whether t is one of Curator's service types (or "", for
// Dynamic): Curator's readers fail on any other, for the whole service.
func (t ServiceType) valid() bool {
	switch t {
	case "", Dynamic, DynamicSequential, Static, Permanent:
		return true
	}
	return false
}

// Instance is one instance of a service, as curator-x-discovery's
// ServiceInstance: the registration a service writes at
// <base path>/<Name>/<ID>.
type Instance struct {
	Name    string // the service's name
	ID      string // unique among the service's instances
	Address string // host name or IP; "" is written as null
	Port    int    // 0: none (null)
	SSLPort int    // 0: none (null)
	// Payload is the instance's payload as JSON (nil: none), without the
	// Java type tag Curator adds to an object: that is PayloadClass.
	Payload json.RawMessage
	// PayloadClass is the Java class Curator's Jackson names in an object
	// payload ("@class"). An object payload with no class is written as
	// "java.util.LinkedHashMap", which a Java ServiceDiscovery<Map> (or
	// <Object>) reads.
	PayloadClass string
	// RegistrationTime is when the instance was made, to the millisecond
	// (registrationTimeUTC).
	RegistrationTime time.Time
	Type             ServiceType // "" is Dynamic; any other value than the four above is refused
	// URISpec is Curator's UriSpec in its written form: literal text and
	// {variables}, such as "{scheme}://{address}:{port}/api"; see URI.
	URISpec string
	// Disabled is true when the instance was written with "enabled": false
	// (Curator's non-default serializer); such an instance is listed but
	// never chosen by a Provider.
	Disabled bool
}

// wireInstance is the JSON of Curator's JsonInstanceSerializer in its
// default (compatible) mode, field for field and in its order; enabled
// is written only when false.
type wireInstance struct {
	Name                string          `json:"name"`
	ID                  string          `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         string          `json:"serviceType"`
	URISpec             *wireURISpec    `json:"uriSpec"`
	Enabled             *bool           `json:"enabled,omitempty"`
}

type wireURISpec struct {
	Parts []wirePart `json:"parts"`
}

type wirePart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// defaultPayloadClass is the class an untagged object payload is written
// with.
const defaultPayloadClass = "java.util.LinkedHashMap"

// Marshal returns the instance as Curator's default JsonInstanceSerializer
// writes it. It fails with ErrBadInstance for an instance without a name
// or an ID, with a payload that is not valid JSON, or (also matching
// ErrBadType) with a Type Curator does not know.
func (i Instance) Marshal() ([]byte, error) {
	if i.Name == "" || i.ID == "" {
		return nil, fmt.Errorf("%w: name and id are required", ErrBadInstance)
	}
	if !i.Type.valid() {
		return nil, fmt.Errorf("%w: service type %q (%w)", ErrBadType, string(i.Type), ErrBadInstance)
	}
	w := wireInstance{Name: i.Name, ID: i.ID, ServiceType: string(i.Type),
		RegistrationTimeUTC: i.RegistrationTime.UnixMilli()}
	if i.RegistrationTime.IsZero() {
		w.RegistrationTimeUTC = 0
	}
	if w.ServiceType == "" {
		w.ServiceType = string(Dynamic)
	}
	if i.Address != "" {
		w.Address = &i.Address
	}
	if i.Port != 0 {
		w.Port = &i.Port
	}
	if i.SSLPort != 0 {
		w.SSLPort = &i.SSLPort
	}
	if i.URISpec != "" {
		parts, err := parseURISpec(i.URISpec)
		if err != nil {
			return nil, err
		}
		w.URISpec = &wireURISpec{Parts: parts}
	}
	if i.Disabled {
		f := false
		w.Enabled = &f
	}
	p, err := tagPayload(i.Payload, i.PayloadClass)
	if err != nil {
		return nil, err
	}
	w.Payload = p
	return json.Marshal(w)
}

// Unmarshal reads an instance written by Curator (either serializer mode,
// with or without the payload's type tag; unknown fields are ignored, a
// missing "enabled" means enabled) or by Marshal. It fails with
// ErrBadInstance when data is not such an instance.
func Unmarshal(data []byte) (Instance, error) {
	var w wireInstance
	if err := json.Unmarshal(data, &w); err != nil {
		return Instance{}, fmt.Errorf("%w: %w", ErrBadInstance, err)
	}
	if w.Name == "" || w.ID == "" {
		return Instance{}, fmt.Errorf("%w: name and id are required", ErrBadInstance)
	}
	i := Instance{Name: w.Name, ID: w.ID, Type: ServiceType(w.ServiceType),
		RegistrationTime: time.UnixMilli(w.RegistrationTimeUTC).UTC()}
	if w.Address != nil {
		i.Address = *w.Address
	}
	if w.Port != nil {
		i.Port = *w.Port
	}
	if w.SSLPort != nil {
		i.SSLPort = *w.SSLPort
	}
	if w.Enabled != nil {
		i.Disabled = !*w.Enabled
	}
	if w.URISpec != nil {
		var b strings.Builder
		for _, p := range w.URISpec.Parts {
			if p.Variable {
				b.WriteString("{" + p.Value + "}")
			} else {
				b.WriteString(p.Value)
			}
		}
		i.URISpec = b.String()
	}
	var err error
	i.Payload, i.PayloadClass, err = untagPayload(w.Payload)
	if err != nil {
		return Instance{}, err
	}
	return i, nil
}

// tagPayload adds the "@class" member to an object payload, first, as
// Jackson writes it.
func tagPayload(p json.RawMessage, class string) (json.RawMessage, error) {
	p = bytes.TrimSpace(p)
	if len(p) == 0 || string(p) == "null" {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(p) {
		return nil, fmt.Errorf("%w: payload is not valid JSON", ErrBadInstance)
	}
	if p[0] != '{' {
		return p, nil // a string, number, boolean or array: written as is
	}
	if class == "" {
		class = defaultPayloadClass
	}
	c, _ := json.Marshal(class)
	rest := bytes.TrimSpace(p[1:])
	var b bytes.Buffer
	b.WriteString(`{"@class":`)
	b.Write(c)
	if rest[0] != '}' {
		b.WriteByte(',')
	}
	b.Write(rest)
	return b.Bytes(), nil
}

// untagPayload takes the "@class" member out of an object payload; other
// payloads are returned as they are.
func untagPayload(p json.RawMessage) (json.RawMessage, string, error) {
	p = bytes.TrimSpace(p)
	if len(p) == 0 || string(p) == "null" {
		return nil, "", nil
	}
	if p[0] != '{' {
		return append(json.RawMessage(nil), p...), "", nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p, &m); err != nil {
		return nil, "", fmt.Errorf("%w: payload: %w", ErrBadInstance, err)
	}
	raw, ok := m["@class"]
	if !ok {
		return append(json.RawMessage(nil), p...), "", nil
	}
	var class string
	if err := json.Unmarshal(raw, &class); err != nil {
		return nil, "", fmt.Errorf("%w: payload @class: %w", ErrBadInstance, err)
	}
	delete(m, "@class")
	out, err := json.Marshal(m)
	if err != nil {
		return nil, "", fmt.Errorf("%w: payload: %w", ErrBadInstance, err)
	}
	return out, class, nil
}

// parseURISpec splits a spec into literal and {variable} parts as
// Curator's UriSpec does (a variable's name is trimmed).
func parseURISpec(spec string) ([]wirePart, error) {
	var parts []wirePart
	for len(spec) > 0 {
		open := strings.IndexAny(spec, "{}")
		if open < 0 {
			parts = append(parts, wirePart{Value: spec})
			break
		}
		if spec[open] == '}' {
			return nil, fmt.Errorf("%w: uri spec: } without {", ErrBadInstance)
		}
		if open > 0 {
			parts = append(parts, wirePart{Value: spec[:open]})
		}
		end := strings.IndexAny(spec[open+1:], "{}")
		if end < 0 || spec[open+1+end] == '{' {
			return nil, fmt.Errorf("%w: uri spec: { not closed by }", ErrBadInstance)
		}
		if v := strings.TrimSpace(spec[open+1 : open+1+end]); v != "" {
			parts = append(parts, wirePart{Value: v, Variable: true})
		}
		spec = spec[open+1+end+1:]
	}
	return parts, nil
}

// URI builds the instance's URI from its URISpec as Curator's
// UriSpec.build does: {scheme} ("https" when the instance has an SSL
// port, else "http"), {name}, {id}, {address}, {port}, {ssl-port},
// {registration-time-utc}, {service-type} (lower case), {[} and {]} for
// braces; vars add or override variables. An unknown variable is left
// out. It returns "" for an instance without a URISpec, and
// ErrBadInstance for a malformed one.
func (i Instance) URI(vars map[string]string) (string, error) {
	parts, err := parseURISpec(i.URISpec)
	if err != nil {
		return "", err
	}
	v := map[string]string{"[": "{", "]": "}", "scheme": "http", "name": i.Name, "id": i.ID,
		"address": i.Address, "port": optInt(i.Port), "ssl-port": optInt(i.SSLPort),
		"registration-time-utc": strconv.FormatInt(i.RegistrationTime.UnixMilli(), 10),
		"service-type":          strings.ToLower(string(i.serviceType()))}
	if i.SSLPort != 0 {
		v["scheme"] = "https"
	}
	for k, x := range vars {
		v[k] = x
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Variable {
			b.WriteString(v[p.Value])
		} else {
			b.WriteString(p.Value)
		}
	}
	return b.String(), nil
}

func optInt(n int) string {
	if n == 0 {
		return "null" // as Java prints a null Integer
	}
	return strconv.Itoa(n)
}

func (i Instance) serviceType() ServiceType {
	if i.Type == "" {
		return Dynamic
	}
	return i.Type
}
