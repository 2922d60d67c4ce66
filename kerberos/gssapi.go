package kerberos

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"
	"github.com/zkrecipes/zkrecipes"
)

var _ zkrecipes.SASLMechanism = (*Mechanism)(nil)

// The exchange, as ZooKeeper 3.8's server (the JDK's GSSAPI SaslServer) runs
// it (RFC 4752):
//
//	C: GSS initial context token (krb5 OID, AP-REQ asking for mutual auth)
//	S: GSS token holding the AP-REP           -> verified, context established
//	C: empty token
//	S: wrap token (RFC 4121), 4 bytes: offered layers | max buffer (3 bytes)
//	C: wrap token: 0x01 (no layer) | 0 0 0 | authzid
//	S: null token, err 0                      -> the server is complete
//
// The keys: the ticket's session key throughout, or the acceptor's subkey
// from the AP-REP when it sends one (the JDK does not, by default).

// krb5OIDDER is the DER encoding of the Kerberos V5 GSS mechanism OID
// 1.2.840.113554.1.2.2 (RFC 1964).
var krb5OIDDER = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Wrap token flags, RFC 4121 §4.2.2.
const (
	wrapSentByAcceptor = 0x01
	wrapSealed         = 0x02
	wrapAcceptorSubkey = 0x04
)

// SASL GSSAPI security layers, RFC 4752 §3.3.
const layerNone = 0x01

// Start begins the exchange with server ("host:port", the address dialled):
// it logs in if no valid ticket-granting ticket is held, gets a service
// ticket for the server's service principal (see ServicePrincipal) and
// returns the first token, the GSS initial context token carrying the AP-REQ.
// It fails with ErrLogin, ErrServiceTicket, ErrKDCUnreachable, or ctx's error. The KDC round
// trips are bounded by gokrb5's own timeouts (a few seconds per KDC), not by
// ctx, which is checked before and after them.
func (m *Mechanism) Start(ctx context.Context, server string) (zkrecipes.SASLClient, []byte, error) {
	if err := errCtx(ctx, "start"); err != nil {
		return nil, nil, err
	}
	spn, err := m.ServicePrincipal(ctx, server)
	if err != nil {
		return nil, nil, err
	}
	cl, err := m.login()
	if err != nil {
		return nil, nil, err
	}
	tkt, key, err := cl.GetServiceTicket(spn)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s for %s: %v", kdcError(ErrServiceTicket, err), spn, m.principal, err)
	}
	if err := errCtx(ctx, "start"); err != nil {
		return nil, nil, err
	}
	auth, err := types.NewAuthenticator(cl.Credentials.Domain(), cl.Credentials.CName())
	if err != nil {
		return nil, nil, fmt.Errorf("zkrecipes/kerberos: authenticator: %w", err)
	}
	auth.Cksum = types.Checksum{
		CksumType: chksumtype.GSSAPI,
		Checksum:  gssChecksum(gssapi.ContextFlagMutual | gssapi.ContextFlagInteg | gssapi.ContextFlagConf),
	}
	apReq, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, nil, fmt.Errorf("zkrecipes/kerberos: AP-REQ: %w", err)
	}
	types.SetFlag(&apReq.APOptions, flags.APOptionMutualRequired)
	req, err := apReq.Marshal()
	if err != nil {
		return nil, nil, fmt.Errorf("zkrecipes/kerberos: AP-REQ: %w", err)
	}
	// RFC 2743 §3.1 InitialContextToken: [APPLICATION 0] { OID, TOK_ID 01 00, AP-REQ }.
	inner := append(append(append([]byte{}, krb5OIDDER...), 0x01, 0x00), req...)
	token := asn1tools.AddASNAppTag(inner, 0)
	return &gssClient{key: key, auth: auth, authzid: m.principal, spn: spn}, token, nil
}

// gssChecksum is the authenticator checksum of RFC 4121 §4.1.1: the length of
// the (empty) channel bindings, 16 zero bytes for them, and the context flags.
func gssChecksum(ctxFlags uint32) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[0:4], 16)
	binary.LittleEndian.PutUint32(b[20:24], ctxFlags)
	return b
}

// gssClient is one connection's exchange; it is used by one goroutine.
type gssClient struct {
	key     types.EncryptionKey // the session key, or the acceptor's subkey
	subkey  bool                // key is the acceptor's subkey
	auth    types.Authenticator
	authzid string
	spn     string
	step    int
}

// Step answers the server's token. The first is the AP-REP, verified against
// the authenticator sent (ErrMutualAuth when it does not match, is missing or
// is a KRB-ERROR; zkrecipes.ErrSASLMechanism when it is no GSSAPI token at
// all, as from a DIGEST-MD5 server); the answer is an empty token. The second is the server's
// security-layer offer, integrity-checked (ErrProtocol when it fails or when
// the server requires a layer); the answer, last, chooses no security layer
// and names the client principal as authorization id.
func (c *gssClient) Step(ctx context.Context, challenge []byte) ([]byte, bool, error) {
	if err := errCtx(ctx, "step"); err != nil {
		return nil, false, err
	}
	c.step++
	switch c.step {
	case 1:
		if err := c.verifyAPRep(challenge); err != nil {
			return nil, false, err
		}
		return []byte{}, false, nil
	case 2:
		resp, err := c.answerOffer(challenge)
		if err != nil {
			return nil, false, err
		}
		return resp, true, nil
	default:
		return nil, false, fmt.Errorf("%w: a token after the exchange ended", ErrProtocol)
	}
}

func (c *gssClient) verifyAPRep(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: %s sent no AP-REP", ErrMutualAuth, c.spn)
	}
	if b[0] != 0x60 {
		// Not a GSS token ([APPLICATION 0]) at all: a DIGEST-MD5 server
		// answers the AP-REQ with its own challenge.
		return fmt.Errorf("%w: %s answered with a token that is not GSSAPI's (%.24q...)", zkrecipes.ErrSASLMechanism, c.spn, b)
	}
	var tok spnego.KRB5Token
	if err := tok.Unmarshal(b); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMutualAuth, c.spn, err)
	}
	switch {
	case tok.IsKRBError():
		return fmt.Errorf("%w: %s answered with a KRB-ERROR: %s", ErrMutualAuth, c.spn, tok.KRBError.Error())
	case !tok.IsAPRep():
		return fmt.Errorf("%w: %s: not an AP-REP", ErrMutualAuth, c.spn)
	}
	plain, err := crypto.DecryptEncPart(tok.APRep.EncPart, c.key, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("%w: %s: AP-REP does not decrypt with the session key: %v", ErrMutualAuth, c.spn, err)
	}
	var enc messages.EncAPRepPart
	if err := enc.Unmarshal(plain); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMutualAuth, c.spn, err)
	}
	if enc.CTime.Unix() != c.auth.CTime.Unix() || enc.Cusec != c.auth.Cusec {
		return fmt.Errorf("%w: %s: AP-REP time does not match the authenticator's", ErrMutualAuth, c.spn)
	}
	if enc.Subkey.KeyType != 0 && len(enc.Subkey.KeyValue) > 0 {
		c.key, c.subkey = enc.Subkey, true
	}
	return nil
}

func (c *gssClient) answerOffer(b []byte) ([]byte, error) {
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(unrotate(b), true); err != nil {
		return nil, fmt.Errorf("%w: security-layer offer: %v", ErrProtocol, err)
	}
	if wt.Flags&wrapSealed != 0 {
		return nil, fmt.Errorf("%w: security-layer offer is encrypted, expected integrity only", ErrProtocol)
	}
	if ok, err := wt.Verify(c.key, keyusage.GSSAPI_ACCEPTOR_SEAL); !ok {
		return nil, fmt.Errorf("%w: security-layer offer fails its integrity check: %v", ErrProtocol, err)
	}
	if len(wt.Payload) != 4 {
		return nil, fmt.Errorf("%w: security-layer offer of %d bytes, want 4", ErrProtocol, len(wt.Payload))
	}
	if wt.Payload[0]&layerNone == 0 {
		return nil, fmt.Errorf("%w: the server requires a SASL security layer (offer %#x); only \"none\" is supported", ErrProtocol, wt.Payload[0])
	}
	payload := append([]byte{layerNone, 0, 0, 0}, c.authzid...)
	et, err := crypto.GetEtype(c.key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	out := gssapi.WrapToken{
		EC:        uint16(et.GetHMACBitLength() / 8),
		SndSeqNum: uint64(c.auth.SeqNumber),
		Payload:   payload,
	}
	if c.subkey {
		out.Flags |= wrapAcceptorSubkey
	}
	if err := out.SetCheckSum(c.key, keyusage.GSSAPI_INITIATOR_SEAL); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return out.Marshal()
}

// unrotate undoes a wrap token's right rotation (RFC 4121 §4.2.5) and zeroes
// its RRC, so that the token reads as payload then checksum.
func unrotate(b []byte) []byte {
	if len(b) <= gssapi.HdrLen || !bytes.HasPrefix(b, []byte{0x05, 0x04}) {
		return b
	}
	rrc := int(binary.BigEndian.Uint16(b[6:8]))
	body := b[gssapi.HdrLen:]
	if rrc == 0 {
		return b
	}
	rrc %= len(body)
	out := append([]byte{}, b[:gssapi.HdrLen]...)
	out[6], out[7] = 0, 0
	out = append(out, body[rrc:]...)
	return append(out, body[:rrc]...)
}
