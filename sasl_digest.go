package zkrecipes

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// DIGEST-MD5 (RFC 2831), client side, qop=auth only, as ZooKeeper's server
// (the JDK's DIGEST-MD5 server, created with protocol "zookeeper" and
// server name "zk-sasl-md5") expects it:
//
//	C: (empty token)                  S: realm="zk-sasl-md5",nonce="…",charset=utf-8,algorithm=md5-sess
//	C: qop=auth,…,digest-uri="zookeeper/zk-sasl-md5",response=<hex>
//	S: rspauth=<hex>                  (the client checks it: mutual authentication)
//
// The digest-uri's host is hard-wired on both ends; it is not the host
// dialled.

const (
	digestURI   = "zookeeper/zk-sasl-md5"
	digestRealm = "zk-sasl-md5" // used only if the challenge names no realm
)

type digestMD5 struct {
	user, password string
}

func (d *digestMD5) Name() string { return "DIGEST-MD5" }

// String, GoString and LogValue print the mechanism and the user: never
// the password, whatever prints it (fmt's %v, %+v and %#v, slog).
func (d *digestMD5) String() string          { return "DIGEST-MD5(" + d.user + ")" }
func (d *digestMD5) GoString() string        { return d.String() }
func (d *digestMD5) LogValue() slog.Value    { return slog.StringValue(d.String()) }
func (c *digestClient) String() string       { return c.m.String() }
func (c *digestClient) GoString() string     { return c.m.String() }
func (c *digestClient) LogValue() slog.Value { return c.m.LogValue() }

func (d *digestMD5) Start(ctx context.Context, server string) (SASLClient, []byte, error) {
	if d.user == "" {
		return nil, nil, fmt.Errorf("%w: DIGEST-MD5 needs a user name", ErrAuthFailed)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, nil, fmt.Errorf("zkrecipes: DIGEST-MD5 cnonce: %w", err)
	}
	return &digestClient{m: d, cnonce: base64.RawStdEncoding.EncodeToString(b[:])}, []byte{}, nil
}

// digestClient is one DIGEST-MD5 exchange.
type digestClient struct {
	m       *digestMD5
	cnonce  string
	step    int
	rspauth string // expected in the server's last token
}

func (c *digestClient) Step(ctx context.Context, challenge []byte) ([]byte, bool, error) {
	c.step++
	switch c.step {
	case 1:
		resp, rspauth, err := digestResponse(c.m.user, c.m.password, c.cnonce, challenge)
		if err != nil {
			return nil, false, err
		}
		c.rspauth = rspauth
		return resp, false, nil
	case 2:
		dir, err := parseDirectives(challenge)
		if err != nil || len(dir["rspauth"]) != 1 {
			return nil, false, fmt.Errorf("%w: DIGEST-MD5: server's final token (%d bytes) has no rspauth", ErrAuthFailed, len(challenge))
		}
		if subtle.ConstantTimeCompare([]byte(strings.ToLower(dir["rspauth"][0])), []byte(c.rspauth)) != 1 {
			return nil, false, fmt.Errorf("%w: DIGEST-MD5: server's rspauth is wrong: it does not know the password", ErrAuthFailed)
		}
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("%w: DIGEST-MD5: unexpected token after the exchange ended", ErrAuthFailed)
}

// digestResponse answers a DIGEST-MD5 challenge: it returns the response
// token and the rspauth value the server must send back.
func digestResponse(user, password, cnonce string, challenge []byte) (resp []byte, rspauth string, err error) {
	dir, err := parseDirectives(challenge)
	if err != nil {
		return nil, "", fmt.Errorf("%w: not a DIGEST-MD5 challenge: %v", ErrSASLMechanism, err)
	}
	one := func(k string) string {
		if v := dir[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	nonce := one("nonce")
	if nonce == "" || len(dir["nonce"]) > 1 {
		return nil, "", fmt.Errorf("%w: not a DIGEST-MD5 challenge (no single nonce)", ErrSASLMechanism)
	}
	if a := one("algorithm"); !strings.EqualFold(a, "md5-sess") {
		return nil, "", fmt.Errorf("%w: DIGEST-MD5 challenge with algorithm %q (want md5-sess)", ErrSASLMechanism, a)
	}
	if q := one("qop"); q != "" && !hasToken(q, "auth") {
		return nil, "", fmt.Errorf("%w: DIGEST-MD5 server does not offer qop auth (offers %q)", ErrAuthFailed, q)
	}
	realm := one("realm")
	if realm == "" {
		realm = digestRealm
	}
	utf8cs := strings.EqualFold(one("charset"), "utf-8")
	enc := func(s string) (string, bool) {
		if utf8cs {
			return s, true
		}
		return latin1(s)
	}
	// The errors name the field, never its value: the password's is
	// secret, and a tampered challenge is how a password gets here.
	u, ok := enc(user)
	if !ok {
		return nil, "", notLatin1("user name")
	}
	p, ok := enc(password)
	if !ok {
		return nil, "", notLatin1("password")
	}
	r, ok := enc(realm)
	if !ok {
		return nil, "", notLatin1("server's realm")
	}
	const nc, qop = "00000001", "auth"
	ha1 := digestHA1(u, r, p, nonce, cnonce)
	response := digestKD(ha1, nonce, nc, cnonce, qop, "AUTHENTICATE:"+digestURI)
	rspauth = digestKD(ha1, nonce, nc, cnonce, qop, ":"+digestURI)
	var b strings.Builder
	if utf8cs {
		b.WriteString("charset=utf-8,")
	}
	fmt.Fprintf(&b, `username=%s,realm=%s,nonce=%s,cnonce=%s,nc=%s,qop=%s,digest-uri=%s,response=%s`,
		quote(user), quote(realm), quote(nonce), quote(cnonce), nc, qop, quote(digestURI), response)
	return []byte(b.String()), rspauth, nil
}

// digestHA1 is HEX(MD5(A1)) for md5-sess: A1 = MD5(user:realm:password) ":" nonce ":" cnonce.
func digestHA1(user, realm, password, nonce, cnonce string) string {
	inner := md5.Sum([]byte(user + ":" + realm + ":" + password))
	a1 := append(inner[:], ":"+nonce+":"+cnonce...)
	return hexMD5(a1)
}

// digestKD is the response value: HEX(MD5(ha1:nonce:nc:cnonce:qop:HEX(MD5(a2)))).
func digestKD(ha1, nonce, nc, cnonce, qop, a2 string) string {
	return hexMD5([]byte(ha1 + ":" + nonce + ":" + nc + ":" + cnonce + ":" + qop + ":" + hexMD5([]byte(a2))))
}

func hexMD5(b []byte) string {
	h := md5.Sum(b)
	return hex.EncodeToString(h[:])
}

// notLatin1 is the error of a field that DIGEST-MD5 without utf-8
// cannot carry; it names the field, not its value.
func notLatin1(field string) error {
	return fmt.Errorf("%w: DIGEST-MD5: the %s is not ISO 8859-1 and the server did not offer charset=utf-8 "+
		"(a real ZooKeeper server always does: check for something rewriting the traffic, and use WithTLS)", ErrAuthFailed, field)
}

// latin1 encodes s in ISO 8859-1, DIGEST-MD5's charset when the server
// names none; false when s has a character beyond it.
func latin1(s string) (string, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return "", false
		}
		out = append(out, byte(r))
	}
	return string(out), true
}

func hasToken(list, tok string) bool {
	for _, t := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(t), tok) {
			return true
		}
	}
	return false
}

// quote writes a quoted-string (RFC 2831 §7.2): backslash before " and \.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// parseDirectives parses a DIGEST-MD5 challenge: comma-separated
// key=value or key="quoted value" directives (keys lower-cased; a key
// may repeat, as realm does).
func parseDirectives(b []byte) (map[string][]string, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("not UTF-8")
	}
	s := string(b)
	out := map[string][]string{}
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' || s[i] == ',') {
			i++
		}
	}
	for skip(); i < len(s); skip() {
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 {
			return nil, fmt.Errorf("directive without value at %d", i)
		}
		key := strings.ToLower(strings.TrimSpace(s[i : i+eq]))
		i += eq + 1
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		var val strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					val.WriteByte(s[i])
					i++
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quoted value of %s", key)
			}
		} else {
			j := strings.IndexByte(s[i:], ',')
			if j < 0 {
				j = len(s) - i
			}
			val.WriteString(strings.TrimSpace(s[i : i+j]))
			i += j
		}
		if key == "" || strings.ContainsAny(key, " \t\"") {
			return nil, fmt.Errorf("bad directive name %q", key)
		}
		out[key] = append(out[key], val.String())
	}
	return out, nil
}
